package dev.tidemark.delta;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;

import io.delta.storage.HadoopFileSystemLogStore;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Abortable;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options.CreateFileOptionKeys;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.AWSServiceIOException;
import org.apache.hadoop.fs.s3a.RemoteFileChangedException;
import org.apache.hadoop.fs.s3a.S3AFileSystem;

/**
 * A Delta {@code LogStore} for S3 that any number of writing drivers may share.
 *
 * <p>Contract: a commit file ({@code _delta_log/NNN.json}, written with {@code overwrite=false})
 * is created only if no object has that key, decided by S3 itself in one request: a PUT with
 * {@code If-None-Match: *}. Of several drivers committing version N at the same moment exactly
 * one PUT succeeds; every other one gets 412 Precondition Failed, which this store throws as
 * {@link java.nio.file.FileAlreadyExistsException}, the exception on which Delta's optimistic
 * transaction re-reads the log, checks for logical conflicts and retries at N+1. A write either
 * lands whole (S3 objects are never partially visible) or not at all.
 *
 * <p>Why not delta-storage's {@code S3SingleDriverLogStore}: it checks that the key is absent
 * and then PUTs unconditionally, with a lock that only covers its own JVM; two drivers pass the
 * check together and the second PUT silently replaces the first commit. The multi-driver
 * DynamoDB store needs a DynamoDB table (and its artifact is not served to this project).
 *
 * <p>The header goes out through S3A's {@code createFile(path)} builder with the mandatory option
 * {@code fs.option.create.conditional.overwrite} (hadoop-aws 3.4.2 and later). S3A's plain
 * {@code create(path, false)} does not send it: it only looks for the key first. The option is
 * mandatory ({@code must}), so a filesystem that cannot honour it fails the write instead of
 * writing unconditionally.
 *
 * <p>Reads are Hadoop's ({@link HadoopFileSystemLogStore}); {@code listFrom} is the inherited
 * listing at the cost of what it returns, one LIST from the start name on, not of the whole
 * {@code _delta_log} ({@link S3LogListing}). S3 has listed strongly consistently since December
 * 2020, so no cache of recently written files is needed.
 */
public class S3PutIfAbsentLogStore extends HadoopFileSystemLogStore {

    /** S3A's switch for conditional creates (default on); off, the header would not be sent. */
    static final String S3A_CONDITIONAL_CREATE = "fs.s3a.create.conditional.enabled";

    /**
     * S3 answers 409 ConditionalRequestConflict when another conditional write of the same key is
     * still in flight: nothing was written, and asking again settles it (200 or 412).
     */
    static final int CONFLICT_ATTEMPTS = 5;
    static final long CONFLICT_BACKOFF_MS = 50;

    public S3PutIfAbsentLogStore(Configuration hadoopConf) {
        super(hadoopConf);
    }

    @Override
    public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration hadoopConf)
            throws IOException {
        FileSystem fs = path.getFileSystem(hadoopConf);
        // The whole file is built before the stream opens: a failure while producing the
        // actions must leave nothing behind, and S3A uploads whatever a closed stream holds.
        byte[] content = lines(actions);
        if (overwrite) {
            // Checkpoint metadata such as _last_checkpoint: last writer wins by design.
            try (FSDataOutputStream out = fs.create(path, true)) {
                out.write(content);
            }
            return;
        }
        if (!hadoopConf.getBoolean(S3A_CONDITIONAL_CREATE, true)) {
            throw new IOException(S3A_CONDITIONAL_CREATE + " is false: S3A would write " + path
                    + " without If-None-Match and a concurrent commit could be lost; remove the setting");
        }
        for (int attempt = 1; ; attempt++) {
            try {
                createIfAbsent(fs, path, content);
                return;
            } catch (org.apache.hadoop.fs.FileAlreadyExistsException | RemoteFileChangedException taken) {
                // The first: S3A found the key before sending anything. The second: S3's 412.
                java.nio.file.FileAlreadyExistsException exists =
                        new java.nio.file.FileAlreadyExistsException(path.toString());
                exists.initCause(taken);
                throw exists;
            } catch (AWSServiceIOException error) {
                if (error.statusCode() != 409 || attempt >= CONFLICT_ATTEMPTS) {
                    throw error;
                }
                pause(CONFLICT_BACKOFF_MS * attempt);
            }
        }
    }

    /**
     * The inherited {@code listFrom} (the folder's entries from {@code path}'s name on, sorted by
     * name; {@link java.io.FileNotFoundException} for a missing folder), listed by S3 from the
     * start name on instead of from the folder's first key: {@link S3LogListing}. A file system
     * other than S3A (a test's stand-in, another connector) gets the inherited method, and so does
     * a folder holding nothing at all.
     */
    @Override
    public Iterator<FileStatus> listFrom(Path path, Configuration hadoopConf) throws IOException {
        FileSystem fs = path.getFileSystem(hadoopConf);
        if (S3LogListing.lists(fs)) {
            Iterator<FileStatus> listed = S3LogListing.listFrom((S3AFileSystem) fs, path);
            if (listed != null) {
                return listed;
            }
        }
        return super.listFrom(path, hadoopConf);
    }

    @Override
    public Boolean isPartialWriteVisible(Path path, Configuration hadoopConf) {
        return false;  // an S3 object appears whole when its PUT completes, never in part
    }

    private static void createIfAbsent(FileSystem fs, Path path, byte[] content) throws IOException {
        // createFile returns the builder as a raw type; build() is an FSDataOutputStream.
        FSDataOutputStream out = (FSDataOutputStream) fs.createFile(path)
                .create()
                .overwrite(false)
                .must(CreateFileOptionKeys.FS_OPTION_CREATE_CONDITIONAL_OVERWRITE, true)
                .build();
        try {
            out.write(content);
        } catch (IOException | RuntimeException error) {
            abort(out);  // close() would upload a file cut short
            throw error;
        }
        out.close();  // the single conditional PUT happens here: 412 surfaces from close()
    }

    private static void abort(FSDataOutputStream out) {
        try {
            ((Abortable) out).abort();
        } catch (RuntimeException ignored) {
            // Aborting is best effort; the write's own error is the one to report.
        }
    }

    private static byte[] lines(Iterator<String> actions) throws IOException {
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        while (actions.hasNext()) {
            buffer.write((actions.next() + "\n").getBytes(StandardCharsets.UTF_8));
        }
        return buffer.toByteArray();
    }

    private static void pause(long millis) throws InterruptedIOException {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while retrying a conditional write");
        }
    }
}
