package dev.tidemark.delta;

import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSDataOutputStreamBuilder;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options.CreateFileOptionKeys;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.fs.s3a.RemoteFileChangedException;
import org.apache.hadoop.util.Progressable;

/**
 * A stand-in for S3A (scheme {@code putifabsent://}) holding objects in memory, with S3's rules
 * for a conditional create: the object is stored when the stream closes, and a create that
 * carries the mandatory conditional option fails at close with S3A's translation of a 412
 * ({@link RemoteFileChangedException}) when the key already exists. A plain create overwrites.
 * Tests queue failures for the next closes with {@link #failNextClose}. It is not S3A, so the
 * store's {@code listFrom} falls back to the inherited listing over {@link #listStatus}.
 */
public class PutIfAbsentFileSystem extends FileSystem {

    static final Map<String, byte[]> OBJECTS = new ConcurrentHashMap<>();
    static final Deque<IOException> NEXT_CLOSE_FAILURES = new ArrayDeque<>();
    static volatile int conditionalCreates;

    static void reset() {
        OBJECTS.clear();
        NEXT_CLOSE_FAILURES.clear();
        conditionalCreates = 0;
    }

    static synchronized void failNextClose(IOException error) {
        NEXT_CLOSE_FAILURES.add(error);
    }

    private static synchronized IOException nextCloseFailure() {
        return NEXT_CLOSE_FAILURES.poll();
    }

    @Override
    public URI getUri() {
        return URI.create("putifabsent://bucket/");
    }

    @Override
    public FSDataOutputStreamBuilder createFile(Path path) {
        return new Builder(this, path);
    }

    @Override
    public FSDataOutputStream create(Path path, FsPermission permission, boolean overwrite, int bufferSize,
            short replication, long blockSize, Progressable progress) throws IOException {
        return stream(path, false);
    }

    private FSDataOutputStream stream(Path path, boolean ifAbsent) throws IOException {
        String key = path.toUri().getPath();
        ByteArrayOutputStream buffer = new ByteArrayOutputStream() {
            @Override
            public void close() throws IOException {
                IOException failure = nextCloseFailure();
                if (failure != null) {
                    throw failure;
                }
                if (!ifAbsent) {
                    OBJECTS.put(key, toByteArray());
                } else if (OBJECTS.putIfAbsent(key, toByteArray()) != null) {
                    throw new RemoteFileChangedException(key, "put", RemoteFileChangedException.PRECONDITIONS_FAILED);
                }
            }
        };
        return new FSDataOutputStream(buffer, null);
    }

    private static final class Builder extends FSDataOutputStreamBuilder<FSDataOutputStream, Builder> {
        private final PutIfAbsentFileSystem fs;

        Builder(PutIfAbsentFileSystem fs, Path path) {
            super(fs, path);
            this.fs = fs;
        }

        @Override
        public Builder getThisBuilder() {
            return this;
        }

        @Override
        public FSDataOutputStream build() throws IOException {
            String option = CreateFileOptionKeys.FS_OPTION_CREATE_CONDITIONAL_OVERWRITE;
            boolean ifAbsent = getMandatoryKeys().contains(option) && getOptions().getBoolean(option, false);
            if (ifAbsent) {
                conditionalCreates++;
            }
            return fs.stream(getPath(), ifAbsent);
        }
    }

    // What the log store does not call.

    @Override
    public FSDataInputStream open(Path path, int bufferSize) {
        throw new UnsupportedOperationException();
    }

    @Override
    public FSDataOutputStream append(Path path, int bufferSize, Progressable progress) {
        throw new UnsupportedOperationException();
    }

    @Override
    public boolean rename(Path source, Path target) {
        throw new UnsupportedOperationException();
    }

    @Override
    public boolean delete(Path path, boolean recursive) {
        throw new UnsupportedOperationException();
    }

    /** Like S3A: the objects right under the folder, and each sub-folder once as a directory. */
    @Override
    public FileStatus[] listStatus(Path path) throws FileNotFoundException {
        String folder = path.toUri().getPath() + "/";
        Map<String, FileStatus> children = new TreeMap<>();
        OBJECTS.forEach((key, content) -> {
            if (key.startsWith(folder)) {
                String rest = key.substring(folder.length());
                int slash = rest.indexOf('/');
                Path child = new Path(getUri().resolve(folder + (slash < 0 ? rest : rest.substring(0, slash))));
                children.put(child.getName(), slash < 0
                        ? new FileStatus(content.length, false, 1, 1, 0, child)
                        : new FileStatus(0, true, 1, 0, 0, child));
            }
        });
        if (children.isEmpty()) {
            throw new FileNotFoundException(path + " does not exist");
        }
        return children.values().toArray(new FileStatus[0]);
    }

    @Override
    public void setWorkingDirectory(Path directory) {
        throw new UnsupportedOperationException();
    }

    @Override
    public Path getWorkingDirectory() {
        return new Path("putifabsent://bucket/");
    }

    @Override
    public boolean mkdirs(Path path, FsPermission permission) {
        throw new UnsupportedOperationException();
    }

    @Override
    public FileStatus getFileStatus(Path path) {
        throw new UnsupportedOperationException();
    }
}
