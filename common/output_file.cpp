#include "common/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <streambuf>
#include <vector>

namespace ssim {
namespace {

std::string why(int err) { return std::strerror(err); }

// An ostream buffer over a file descriptor that remembers the errno of the first failed write.
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd), buffer_(std::size_t{1} << 16) { reset(); }
  int error() const { return error_; }
  bool drain() {
    const bool ok = write_all(pbase(), static_cast<std::size_t>(pptr() - pbase()));
    reset();
    return ok;
  }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return drain() ? 0 : -1; }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n < static_cast<std::streamsize>(buffer_.size())) return std::streambuf::xsputn(s, n);
    if (!drain() || !write_all(s, static_cast<std::size_t>(n))) return 0;
    return n;
  }

 private:
  void reset() { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  bool write_all(const char* p, std::size_t n) {
    if (error_ != 0) return false;
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
        return false;
      }
      if (w == 0) {
        error_ = EIO;
        return false;
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  }

  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

enum class Kind { missing, regular, in_place };

struct Target {
  std::string path;  // after following links
  Kind kind = Kind::missing;
  mode_t mode = 0;      // of an existing regular file
  bool append = false;  // in place, at the end of a regular file (/dev/stdout > file)
};

std::string parent_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Why a path of this type is not written to.
std::string refusal(mode_t mode) {
  const char* what = S_ISDIR(mode)    ? "is a directory; give a file name"
                     : S_ISBLK(mode)  ? "is a block device"
                     : S_ISSOCK(mode) ? "is a socket"
                                      : "is not a regular file";
  return std::string(what) +
         " (output goes to regular files, character devices such as /dev/stdout, and pipes)";
}

Target resolve(const std::string& given) {
  std::string path = given;
  for (int links = 0;; ++links) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      const int err = errno;
      if (err != ENOENT) throw InputError(given + ": cannot open file for writing: " + why(err));
      if (base_of(path).empty() || base_of(path) == "." || base_of(path) == "..")
        throw InputError(given + ": names a folder; give a file name");
      return {path, Kind::missing, 0};
    }
    if (S_ISLNK(st.st_mode) && (path.starts_with("/proc/") || path.starts_with("/dev/fd/"))) {
      // A descriptor's link (/dev/stdout -> /proc/self/fd/1): what it names may have no path
      // (a pipe), so it is opened as it is, in place; a regular file behind it is appended to,
      // so that nothing already written there is overwritten.
      struct stat named {};
      if (::stat(path.c_str(), &named) != 0)
        throw InputError(given + ": cannot open file for writing: " + why(errno));
      if (S_ISREG(named.st_mode)) return {path, Kind::in_place, 0, true};
      if (S_ISCHR(named.st_mode) || S_ISFIFO(named.st_mode))
        return {path, Kind::in_place, 0, false};
      throw InputError(given + ": " + refusal(named.st_mode));
    }
    if (S_ISLNK(st.st_mode)) {
      if (links == 40)
        throw InputError(given +
                         ": cannot open file for writing: too many levels of symbolic links");
      std::string link(static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 4096) + 1, '\0');
      const ssize_t n = ::readlink(path.c_str(), link.data(), link.size());
      if (n < 0)
        throw InputError(given + ": cannot read the symbolic link " + path + ": " + why(errno));
      link.resize(static_cast<std::size_t>(n));
      path = link.starts_with('/') ? link : parent_of(path) + "/" + link;
      continue;
    }
    if (S_ISREG(st.st_mode)) return {path, Kind::regular, st.st_mode & 07777};
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return {path, Kind::in_place, 0};
    throw InputError(given + ": " + refusal(st.st_mode));
  }
}

std::atomic<unsigned> temp_counter{0};

// A new file next to `target`, created exclusively; returns its descriptor and sets `temp`.
int create_temporary(const std::string& given, const std::string& target, std::string& temp) {
  const std::string dir = parent_of(target);
  std::string base = base_of(target);
  if (base.size() > 180) base.resize(180);  // the name must stay under NAME_MAX
  for (int attempt = 0; attempt < 1000; ++attempt) {
    temp = dir + "/." + base + "." + std::to_string(::getpid()) + "-" +
           std::to_string(temp_counter++) + ".tmp";
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd >= 0) return fd;
    if (errno != EEXIST) {
      const int err = errno;
      temp.clear();
      throw InputError(given + ": cannot open file for writing: " + why(err));
    }
  }
  temp.clear();
  throw InputError(given + ": cannot open file for writing: no free temporary name in " + dir);
}

}  // namespace

struct OutputFile::State {
  std::string name;    // as given, or "standard output"
  std::string target;  // the file written (links followed)
  std::string temp;    // the temporary, while this object owns it ("" once renamed)
  int fd = -1;
  bool regular = false;  // a regular file: fsync'd
  std::unique_ptr<FdBuf> buf;
  std::unique_ptr<std::ostream> os;

  void open_stream() {
    buf = std::make_unique<FdBuf>(fd);
    os = std::make_unique<std::ostream>(buf.get());
  }
  [[noreturn]] void fail(const std::string& what, int err) {
    throw OutputError(name + ": " + what + (err != 0 ? ": " + why(err) : std::string()));
  }
};

OutputFile::OutputFile() : s_(std::make_unique<State>()) {}

OutputFile::OutputFile(const std::string& path) : OutputFile() {
  if (path.empty() || path == "-") {
    s_->name = "standard output";
    return;
  }
  s_->name = path;
  const Target t = resolve(path);
  s_->target = t.path;
  if (t.kind == Kind::in_place) {
    s_->fd = ::open(t.path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | (t.append ? O_APPEND : 0));
    if (s_->fd < 0) throw InputError(path + ": cannot open file for writing: " + why(errno));
  } else {
    s_->fd = create_temporary(path, t.path, s_->temp);
    s_->regular = true;
    if (t.kind == Kind::regular) (void)::fchmod(s_->fd, t.mode);  // keep the replaced file's mode
  }
  s_->open_stream();
}

OutputFile OutputFile::append(const std::string& path) {
  OutputFile f;
  f.s_->name = path;
  const Target t = resolve(path);
  if (t.kind != Kind::regular) {
    throw InputError(path + (t.kind == Kind::missing
                                 ? ": cannot open file for appending: no such file"
                                 : ": is not a regular file"));
  }
  f.s_->target = t.path;
  f.s_->fd = ::open(t.path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  if (f.s_->fd < 0) throw InputError(path + ": cannot open file for appending: " + why(errno));
  f.s_->regular = true;
  f.s_->open_stream();
  return f;
}

OutputFile::OutputFile(OutputFile&&) noexcept = default;

OutputFile::~OutputFile() {
  if (!s_) return;
  if (s_->fd >= 0) ::close(s_->fd);
  if (!s_->temp.empty()) ::unlink(s_->temp.c_str());  // created by this object, never renamed
}

std::ostream& OutputFile::stream() { return s_->os ? *s_->os : std::cout; }

const std::string& OutputFile::name() const { return s_->name; }

bool OutputFile::is_stdout() const { return !s_->os; }

void OutputFile::flush() {
  if (is_stdout()) {
    flush_standard_output();
    return;
  }
  if (s_->fd < 0) return;
  s_->os->flush();
  if (s_->buf->error() != 0 || !*s_->os) s_->fail("write failed", s_->buf->error());
}

void OutputFile::publish() {
  flush();
  if (is_stdout() || s_->temp.empty()) return;
  if (::fsync(s_->fd) != 0 && errno != EINVAL) s_->fail("write failed (fsync)", errno);
  rename_into_place();
}

void OutputFile::rename_into_place() {
  if (::rename(s_->temp.c_str(), s_->target.c_str()) != 0) {
    const int err = errno;
    s_->fail("cannot rename the temporary " + s_->temp + " to it", err);
  }
  s_->temp.clear();
  // The rename itself survives a crash once the folder is synced; best effort.
  const int dir = ::open(parent_of(s_->target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
}

void OutputFile::commit() {
  if (is_stdout()) {
    flush_standard_output();
    return;
  }
  if (s_->fd < 0) return;
  flush();
  if (s_->regular && ::fsync(s_->fd) != 0 && errno != EINVAL)
    s_->fail("write failed (fsync)", errno);
  const int fd = s_->fd;
  s_->fd = -1;
  if (::close(fd) != 0 && errno != EINTR) {
    const int err = errno;
    s_->fail("write failed (close)", err);
  }
  if (!s_->temp.empty()) rename_into_place();
}

void write_output_file(const std::string& path, std::string_view text) {
  OutputFile out(path);
  out.stream().write(text.data(), static_cast<std::streamsize>(text.size()));
  out.commit();
}

namespace {

// std::cout's buffer once guard_standard_streams() ran: it keeps the errno of a failed write.
// Never destroyed, since std::cout is flushed after static objects are gone.
FdBuf* stdout_buf = nullptr;

}  // namespace

void flush_standard_output() {
  std::cout.flush();
  int err = stdout_buf ? stdout_buf->error() : 0;
  bool failed = !std::cout || err != 0;
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    failed = true;
    if (err == 0) err = errno;
  }
  if (failed)
    throw OutputError("standard output: write failed" +
                      (err != 0 ? ": " + why(err) : std::string()));
}

void guard_standard_streams() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // Standard input opened write-only and the outputs read-only: any use of them fails.
    const int opened = ::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
    if (opened >= 0 && opened != fd) {
      ::dup2(opened, fd);
      ::close(opened);
    }
  }
  if (stdout_buf == nullptr) {
    std::cout.flush();
    stdout_buf = new FdBuf(STDOUT_FILENO);
    std::cout.rdbuf(stdout_buf);
    if (::isatty(STDOUT_FILENO)) std::cout.setf(std::ios::unitbuf);  // a terminal sees each line
  }
}

int check_standard_output(std::string_view program, std::ostream& err, int exit_code) {
  std::string message;
  try {
    flush_standard_output();
    if (::close(STDOUT_FILENO) != 0 && errno != EBADF && errno != EINTR)
      message = std::string("standard output: write failed (close): ") + why(errno);
  } catch (const OutputError& e) {
    message = e.what();
  }
  if (message.empty() || exit_code != kExitOk) return exit_code;
  err << program << ": error: " << message << "\n";
  return kExitResource;
}

}  // namespace ssim
