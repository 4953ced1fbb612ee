package streamsql.engine.fs;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system without a process per file.
 *
 * <p>Without Hadoop's native library (which no Maven artifact ships), {@link RawLocalFileSystem}
 * runs {@code chmod} after creating every file and {@code readlink} before every rename. A
 * streaming query writes several checkpoint files per micro-batch and per state partition (the
 * offset and commit logs, each state store's changelog and its checksum), so on a local
 * checkpoint a 1k events/s pipeline started about 70 processes a second, each with a thread
 * to read its output. Both are done here with {@code java.nio} instead, with the same
 * result: the file's permission bits, and a file status that follows no link for a file that
 * is not one.
 */
public class NioRawLocalFileSystem extends RawLocalFileSystem {

  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    if (permission.getStickyBit()) {  // java.nio cannot set it: Hadoop's own way does
      super.setPermission(p, permission);
      return;
    }
    Set<PosixFilePermission> bits = EnumSet.noneOf(PosixFilePermission.class);
    add(bits, permission.getUserAction(),
        PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);
    add(bits, permission.getGroupAction(),
        PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE);
    add(bits, permission.getOtherAction(),
        PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);
    try {
      Files.setPosixFilePermissions(pathToFile(p).toPath(), bits);
    } catch (UnsupportedOperationException notPosix) {
      super.setPermission(p, permission);
    }
  }

  private static void add(Set<PosixFilePermission> bits, FsAction action,
                          PosixFilePermission read, PosixFilePermission write, PosixFilePermission execute) {
    if (action.implies(FsAction.READ)) bits.add(read);
    if (action.implies(FsAction.WRITE)) bits.add(write);
    if (action.implies(FsAction.EXECUTE)) bits.add(execute);
  }

  /** A path that is no symbolic link has the status of the file itself (what Hadoop returns
   *  once {@code readlink} printed nothing); a link is left to Hadoop. */
  @Override
  public FileStatus getFileLinkStatus(Path f) throws IOException {
    File file = pathToFile(f);
    if (Files.isSymbolicLink(file.toPath())) {
      return super.getFileLinkStatus(f);
    }
    return getFileStatus(f);
  }
}
