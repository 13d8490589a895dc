package org.sparkcat.spark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system, checksum files and all, except that it sets permissions with {@code java.nio}.
 *
 * <p>Without Hadoop's native library (pyspark ships none) {@link RawLocalFileSystem} sets a new file's
 * permissions by forking {@code chmod}: twice per file it creates (the file and its {@code .crc}), so four
 * processes per micro-batch for a query's offsets and commits files. {@link LocalCheckpointFileManager} writes
 * local checkpoints through this class instead; nothing else uses it.
 */
public final class NioLocalFileSystem extends LocalFileSystem {
    public NioLocalFileSystem() {
        super(new NioRawLocalFileSystem());
    }

    /** The raw file system underneath: {@code chmod} by a system call instead of a process. */
    static final class NioRawLocalFileSystem extends RawLocalFileSystem {
        @Override
        public void setPermission(Path p, FsPermission permission) throws IOException {
            Files.setPosixFilePermissions(pathToFile(p).toPath(), posix(permission));
        }
    }

    /** The read, write and execute bits of {@code permission} (sticky and the like do not apply to these files). */
    static Set<PosixFilePermission> posix(FsPermission permission) {
        return PosixFilePermissions.fromString(permission.getUserAction().SYMBOL
                + permission.getGroupAction().SYMBOL + permission.getOtherAction().SYMBOL);
    }
}
