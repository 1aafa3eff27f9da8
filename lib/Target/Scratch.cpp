//===- Scratch.cpp - Per-process temporary files and child processes ------===//
//
// Where ptxas' input, output and log live, and how ptxas is run, so that a
// compile that is killed leaves nothing behind:
//  - every temporary file is in one directory per process,
//    $TMPDIR/blasst-proc-<pid>-XXXXXX, which the process holds an flock on for
//    its lifetime and removes at exit;
//  - the files are registered with llvm::sys::RemoveFileOnSignal, so SIGTERM
//    or SIGINT removes them (LLVM's handler then re-raises the signal to the
//    previous handler);
//  - ptxas runs with PR_SET_PDEATHSIG, so it dies with the compiling thread
//    and cannot write its output after the owner is gone;
//  - what SIGKILL leaves (the directory and its files) is removed by the next
//    process that creates its own directory: a directory whose flock is free
//    and whose process no longer exists.
//
//===----------------------------------------------------------------------===//
#include "blasst/Target/Target.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace blasst;
namespace fs = llvm::sys::fs;

namespace {
constexpr llvm::StringLiteral kPrefix = "blasst-proc-";

/// "blasst-proc-<pid>-XXXXXX" -> pid, or 0 for other names.
pid_t ownerOf(llvm::StringRef name) {
  if (!name.consume_front(kPrefix))
    return 0;
  auto [pidText, rest] = name.split('-');
  unsigned long long pid = 0;
  if (rest.size() != 6 || llvm::getAsUnsignedInteger(pidText, 10, pid) ||
      pid == 0)
    return 0;
  return pid_t(pid);
}

bool processGone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

/// This process's directory. Recreated after a fork (the child gets its own;
/// the parent's stays locked by the parent).
struct ScratchState {
  std::mutex mutex;
  pid_t owner = 0;
  std::string path;
  int lockFd = -1;

  ~ScratchState() {
    // At a normal exit. Files still registered for removal on signals are
    // already gone or are removed here.
    if (owner == ::getpid() && !path.empty())
      (void)fs::remove_directories(path);
  }
};

ScratchState &state() {
  static ScratchState s;
  return s;
}
} // namespace

unsigned blasst::removeStaleScratchDirectories(llvm::StringRef tmpDir) {
  unsigned removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(tmpDir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    pid_t pid = ownerOf(name);
    if (pid == 0 || pid == ::getpid() || !processGone(pid))
      continue;
    // The owner is gone; its lock is free unless a process in another PID
    // namespace with the same pid holds it.
    int fd = ::open(it->path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
      continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        !fs::remove_directories(it->path()))
      ++removed;
    ::close(fd);
  }
  return removed;
}

llvm::Expected<std::string> blasst::processScratchDirectory() {
  ScratchState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  pid_t self = ::getpid();
  if (s.owner == self && fs::is_directory(s.path))
    return s.path;
  if (s.owner != self && s.lockFd >= 0) {
    // Forked: the parent's directory is the parent's (closing our copy of
    // the descriptor leaves its lock alone).
    ::close(s.lockFd);
    s.lockFd = -1;
  }

  llvm::SmallString<128> tmp;
  llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, tmp);
  removeStaleScratchDirectories(tmp);
  llvm::SmallString<128> pattern(tmp);
  llvm::sys::path::append(pattern, kPrefix + llvm::Twine(self) + "-XXXXXX");
  std::string buf(pattern.str());
  if (!::mkdtemp(buf.data()))
    return llvm::createStringError(
        "cannot create a temporary directory " + std::string(pattern) + ": " +
        std::strerror(errno) + " (set TMPDIR to a writable directory)");
  int fd = ::open(buf.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) {
    std::string why = std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    ::rmdir(buf.c_str());
    return llvm::createStringError("cannot lock the temporary directory " +
                                   buf + ": " + why);
  }
  s.owner = self;
  s.path = buf;
  s.lockFd = fd;
  return s.path;
}

llvm::Expected<TempFile> TempFile::create(llvm::StringRef name) {
  llvm::Expected<std::string> dir = processScratchDirectory();
  if (!dir)
    return dir.takeError();
  llvm::SmallString<256> model(*dir);
  llvm::sys::path::append(model, name + "-%%%%%%%%");
  TempFile file;
  llvm::SmallString<256> path;
  std::error_code ec;
  for (int attempt = 0; attempt < 128; ++attempt) {
    fs::createUniquePath(model, path, /*MakeAbsolute=*/false);
    // Registered before it exists: a signal between creating and
    // registering would leave it behind.
    llvm::sys::RemoveFileOnSignal(path);
    int fd;
    ec = fs::openFileForWrite(path, fd, fs::CD_CreateNew);
    if (!ec) {
      ::close(fd);
      file.path = path;
      return std::move(file);
    }
    llvm::sys::DontRemoveFileOnSignal(path);
    if (ec != std::errc::file_exists)
      break;
  }
  return llvm::createStringError("cannot create a temporary file in " + *dir +
                                 ": " + ec.message());
}

TempFile::~TempFile() {
  if (path.empty())
    return;
  (void)fs::remove(path);
  llvm::sys::DontRemoveFileOnSignal(path);
}

int blasst::runProgram(const std::string &program,
                       llvm::ArrayRef<std::string> args,
                       const std::string &outputPath, std::string *error) {
  std::vector<std::string> storage{program};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (std::string &a : storage)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  int out = ::open(outputPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                   0600);
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (out < 0 || in < 0) {
    *error = "cannot open " + (out < 0 ? outputPath : "/dev/null") + ": " +
             std::strerror(errno);
    if (out >= 0)
      ::close(out);
    if (in >= 0)
      ::close(in);
    return -1;
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec. The child dies
    // with the thread that started it (a compile killed with SIGKILL), so
    // it cannot write its output after the owner's files were cleaned up.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(127);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int forkErrno = errno;
  ::close(out);
  ::close(in);
  if (pid < 0) {
    *error = "cannot start " + program +
             ": fork failed: " + std::strerror(forkErrno);
    return -1;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      *error = "cannot wait for " + program + ": " + std::strerror(errno);
      return -1;
    }
  }
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) == 127)
      *error = "cannot run " + program + " (exit code 127)";
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status))
    *error =
        program + " was killed by signal " + std::to_string(WTERMSIG(status));
  return -1;
}
