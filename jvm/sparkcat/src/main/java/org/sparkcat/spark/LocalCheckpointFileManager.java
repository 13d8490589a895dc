package org.sparkcat.spark;

import java.io.IOException;
import java.io.UncheckedIOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager;

/**
 * Spark's checkpoint file manager, but on the local file system the one built on Hadoop's {@code FileSystem}.
 *
 * <p>Spark's default goes through Hadoop's {@code FileContext}, which on the local file system without Hadoop's
 * native library (pyspark ships none) forks {@code readlink} for every rename it resolves: about 15 process starts,
 * some 30-45 ms of the JVM's CPU, per micro-batch of every query (its offsets and commits files). Spark's
 * {@link FileSystemBasedCheckpointFileManager} renames with {@code java.io} there, which is atomic on a local
 * file system as the checkpoint protocol needs; it writes through {@link NioLocalFileSystem}, which sets the new
 * files' permissions without forking {@code chmod}. Every other file system (HDFS, S3, ...) keeps what Spark would
 * pick. Spark instantiates this class for {@code spark.sql.streaming.checkpointFileManagerClass}.
 */
public final class LocalCheckpointFileManager implements CheckpointFileManager {
    /** Spark's (internal) setting that names the checkpoint file manager class. */
    public static final String SETTING = "spark.sql.streaming.checkpointFileManagerClass";

    private final CheckpointFileManager delegate;

    public LocalCheckpointFileManager(Path path, Configuration conf) {
        this.delegate = isLocal(path, conf)
                ? new FileSystemBasedCheckpointFileManager(path, withNioLocal(conf))
                : sparkDefault(path, conf);
    }

    /** {@code conf} with {@code file:} served by a {@link NioLocalFileSystem} of its own. */
    private static Configuration withNioLocal(Configuration conf) {
        Configuration out = new Configuration(conf);
        out.set("fs.file.impl", NioLocalFileSystem.class.getName());
        // Hadoop caches file systems by scheme and user, not by configuration: a cached instance would be
        // Hadoop's own class here, and ours would be handed to every other user of file: paths.
        out.setBoolean("fs.file.impl.disable.cache", true);
        return out;
    }

    /** The manager Spark picks for {@code path} with this setting unset. */
    private static CheckpointFileManager sparkDefault(Path path, Configuration conf) {
        Configuration withoutUs = new Configuration(conf);
        withoutUs.unset(SETTING);
        return CheckpointFileManager.create(path, withoutUs);
    }

    private static boolean isLocal(Path path, Configuration conf) {
        try {  // the file system the path resolves to: a path without a scheme is on fs.defaultFS
            return "file".equals(path.getFileSystem(conf).getScheme());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot reach the file system of " + path, e);
        }
    }

    /** The class of the manager this one hands every call to (for tests and logs). */
    public String delegateClass() {
        return delegate.getClass().getName();
    }

    /** The class of the file system a FileSystem-based delegate writes through (for tests); null for FileContext's. */
    public String localFileSystemClass() {
        return delegate instanceof FileSystemBasedCheckpointFileManager
                ? ((FileSystemBasedCheckpointFileManager) delegate).fs().getClass().getName()
                : null;
    }

    /** True: lets Python check that this class is on the driver's class path before naming it in the session. */
    public static boolean available() {
        return true;
    }

    @Override
    public CancellableFSDataOutputStream createAtomic(Path path, boolean overwriteIfPossible) {
        return delegate.createAtomic(path, overwriteIfPossible);
    }

    @Override
    public FSDataInputStream open(Path path) {
        return delegate.open(path);
    }

    @Override
    public FileStatus[] list(Path path, PathFilter filter) {
        return delegate.list(path, filter);
    }

    @Override
    public FileStatus[] list(Path path) {
        return delegate.list(path);
    }

    @Override
    public void mkdirs(Path path) {
        delegate.mkdirs(path);
    }

    @Override
    public boolean exists(Path path) {
        return delegate.exists(path);
    }

    @Override
    public void delete(Path path) {
        delegate.delete(path);
    }

    @Override
    public boolean isLocal() {
        return delegate.isLocal();
    }

    @Override
    public Path createCheckpointDirectory() {
        return delegate.createCheckpointDirectory();
    }

    @Override
    public void close() {
        delegate.close();
    }
}
