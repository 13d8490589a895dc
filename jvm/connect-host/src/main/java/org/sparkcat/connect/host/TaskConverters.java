package org.sparkcat.connect.host;

import org.apache.kafka.connect.runtime.ConnectorConfig;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.runtime.isolation.Plugins;
import org.apache.kafka.connect.runtime.isolation.Plugins.ClassLoaderUsage;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;

/**
 * A task's key, value and header converters as Connect's {@code Worker} picks them: the connector's own
 * ({@code key.converter}, ...) when it names one, loaded with the connector's class loader, else the worker's.
 * Made under the connector's loader ({@code plugins.withClassLoader}).
 */
record TaskConverters(Converter key, Converter value, HeaderConverter header) {
    static TaskConverters of(Plugins plugins, ConnectorConfig config, WorkerConfig worker) {
        HeaderConverter header = plugins.newHeaderConverter(config, WorkerConfig.HEADER_CONVERTER_CLASS_CONFIG,
                ClassLoaderUsage.CURRENT_CLASSLOADER);
        if (header == null) {
            header = plugins.newHeaderConverter(worker, WorkerConfig.HEADER_CONVERTER_CLASS_CONFIG,
                    ClassLoaderUsage.PLUGINS);
        }
        return new TaskConverters(converter(plugins, config, worker, WorkerConfig.KEY_CONVERTER_CLASS_CONFIG),
                converter(plugins, config, worker, WorkerConfig.VALUE_CONVERTER_CLASS_CONFIG), header);
    }

    private static Converter converter(Plugins plugins, ConnectorConfig config, WorkerConfig worker, String key) {
        Converter own = plugins.newConverter(config, key, ClassLoaderUsage.CURRENT_CLASSLOADER);
        return own != null ? own : plugins.newConverter(worker, key, ClassLoaderUsage.PLUGINS);
    }
}
