package dev.tidemark.delta;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Iterator;
import java.util.UUID;

import io.delta.storage.HadoopFileSystemLogStore;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A Delta {@code LogStore} for a lake on a local (or mounted) file system that any number of
 * writing drivers may share.
 *
 * <p>Contract: a commit file ({@code _delta_log/NNN.json}, written with {@code overwrite=false})
 * appears only if no file has that name, decided by the kernel in one system call, and it
 * appears whole. The content goes to a hidden temporary file in the same folder first, forced to
 * disk; then {@code link(2)} gives it the commit's name, which fails with {@code EEXIST} when the
 * name is taken. Of several drivers committing version N at the same moment exactly one link
 * succeeds; every other one gets {@link FileAlreadyExistsException}, the exception on which
 * Delta's optimistic transaction re-reads the log, checks for logical conflicts and retries at
 * N+1. An overwrite ({@code _last_checkpoint}) is a {@code rename(2)} over the old file.
 *
 * <p>Why not delta-storage's {@code HDFSLogStore}, Delta's default for {@code file:}: it renames
 * its temporary file with Hadoop's {@code FileContext.rename(..., NONE)}, which on the local file
 * system checks that the name is free and then renames, two steps. Two drivers pass the check
 * together and the second rename replaces the first commit, and Hadoop's checksum side files of
 * the two get crossed: measured with two drivers appending to one table in lock step, 60 rounds,
 * one acknowledged commit lost and, from version 101 on, a commit file whose checksum no longer
 * matched, which no reader could open again (tests/integration/test_lake_tables.py).
 *
 * <p>Files are written with {@code java.nio}, so no Hadoop checksum side file ({@code .NAME.crc})
 * is made; a stale one left by an earlier writer for the name about to be written is removed
 * first, or Hadoop's checksummed reader would refuse the new file. Reads are Hadoop's
 * ({@link HadoopFileSystemLogStore}); {@code listFrom} is the inherited listing at the cost of
 * what it returns, not of the whole folder ({@link LocalLogListing}). Partial writes of other files (checkpoints) stay
 * visible on this file system, so Delta keeps writing those through a rename.
 */
public class LocalPutIfAbsentLogStore extends HadoopFileSystemLogStore {

    public LocalPutIfAbsentLogStore(Configuration hadoopConf) {
        super(hadoopConf);
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
            throws IOException {
        java.nio.file.Path target = localPath(path);
        java.nio.file.Path folder = target.getParent();
        // The whole file is built before anything is written: a failure while producing the
        // actions must leave nothing behind.
        byte[] content = lines(actions);
        Files.createDirectories(folder);
        java.nio.file.Path temporary = folder.resolve("." + target.getFileName() + "." + UUID.randomUUID() + ".tmp");
        try {
            writeForced(temporary, content);
            Files.deleteIfExists(checksumOf(target));
            if (overwrite) {
                Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                return;
            }
            try {
                Files.createLink(target, temporary);
            } catch (FileAlreadyExistsException taken) {
                FileAlreadyExistsException exists = new FileAlreadyExistsException(path.toString());
                exists.initCause(taken);
                throw exists;
            }
        } finally {
            Files.deleteIfExists(temporary);
        }
    }

    /**
     * The inherited {@code listFrom} (the folder's entries from {@code path}'s name on, sorted by
     * name; {@link java.io.FileNotFoundException} for a missing folder) without a stat of every
     * entry of the folder: {@link LocalLogListing}. Another file system gets the inherited method.
     */
    @Override
    public Iterator<FileStatus> listFrom(Path path, Configuration hadoopConf) throws IOException {
        FileSystem fs = path.getFileSystem(hadoopConf);
        if (!LocalLogListing.lists(fs)) {
            return super.listFrom(path, hadoopConf);
        }
        return LocalLogListing.listFrom(fs, path);
    }

    @Override
    public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
        return true;  // true of the file system (a checkpoint being written is visible); commits are linked whole
    }

    /** The local file of a Hadoop path ({@code file:/...}, or a path without a scheme). */
    static java.nio.file.Path localPath(Path path) throws IOException {
        String scheme = path.toUri().getScheme();
        if (scheme != null && !scheme.equals("file")) {
            throw new IOException("LocalPutIfAbsentLogStore writes local files only, not " + path
                    + ": set spark.delta.logStore." + scheme + ".impl to a store for that file system");
        }
        return java.nio.file.Paths.get(path.toUri().getPath());
    }

    /** Hadoop's checksum side file of {@code file}: {@code .NAME.crc} beside it. */
    static java.nio.file.Path checksumOf(java.nio.file.Path file) {
        return file.resolveSibling("." + file.getFileName() + ".crc");
    }

    private static void writeForced(java.nio.file.Path file, byte[] content) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(content);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            channel.force(true);  // on disk before it has a name a reader can find
        }
    }

    private static byte[] lines(Iterator<String> actions) throws IOException {
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        while (actions.hasNext()) {
            buffer.write((actions.next() + "\n").getBytes(StandardCharsets.UTF_8));
        }
        return buffer.toByteArray();
    }
}
