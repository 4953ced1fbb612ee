package streamsql.engine.fs;

/**
 * The {@code file:} scheme for Hadoop's FileSystem API ({@code fs.file.impl}): Hadoop's
 * checksummed local file system over {@link NioRawLocalFileSystem}.
 */
public class LocalFileSystem extends org.apache.hadoop.fs.LocalFileSystem {
  public LocalFileSystem() {
    super(new NioRawLocalFileSystem());
  }
}
