// Whole-or-nothing output files.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "meshplan/diag.hpp"
#include "meshplan/recipe.hpp"

namespace meshplan {

void WriteFileAtomically(const std::string& path, const std::string& content, bool force) {
  const SourceLoc loc{path, 0, 0};
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw InputError(loc, "--out", "is a directory; expected a file path");
    if (!force) throw InputError(loc, "--out", "file exists; pass --force to replace it");
  }
  std::string tmpl = path + ".tmp.XXXXXX";
  int fd = mkstemp(tmpl.data());
  if (fd < 0) {
    throw InputError(loc, "--out", std::string("cannot create a file next to it: ") + std::strerror(errno));
  }
  const char* p = content.data();
  size_t left = content.size();
  bool ok = true;
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  const int saved = errno;
  // mkstemp creates 0600; give the file the usual 0666 & ~umask.
  const mode_t mask = umask(0);
  umask(mask);
  if (ok && fchmod(fd, 0666 & ~mask) != 0) ok = false;
  if (ok && fsync(fd) != 0) ok = false;
  if (close(fd) != 0) ok = false;
  if (!ok || std::rename(tmpl.c_str(), path.c_str()) != 0) {
    const int err = ok ? errno : saved;
    unlink(tmpl.c_str());
    throw InputError(loc, "--out", std::string("cannot write: ") + std::strerror(err));
  }
}

}  // namespace meshplan
