package sparkcat.registry;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.List;
import javax.enterprise.context.ApplicationScoped;
import javax.enterprise.inject.Produces;

/**
 * Stands in for Apicurio's config-index Quarkus extension, whose build-time half is not on Maven
 * Central: no property of the registry is changeable at run time (the tests need none).
 */
@ApplicationScoped
public class ConfigIndexStandIn {
  @Produces
  @ApplicationScoped
  DynamicConfigPropertyList dynamicConfigProperties() {
    return new DynamicConfigPropertyList(List.of());
  }
}
