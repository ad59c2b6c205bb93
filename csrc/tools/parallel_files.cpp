// See parallel_files.hpp.
#include "tools/parallel_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "tools/trace_write.hpp"

namespace pypto::tools {

void write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw TraceWriteError("cannot write " + path + ": " + std::strerror(errno));
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void write_all(int fd, std::initializer_list<std::string_view> pieces, const std::string& path) {
  constexpr size_t kMost = 8;
  iovec v[kMost];
  size_t n = 0;
  for (std::string_view piece : pieces) {
    if (piece.empty()) continue;
    if (n == kMost) throw std::invalid_argument("write_all: more than 8 pieces");
    v[n++] = {const_cast<char*>(piece.data()), piece.size()};
  }
  iovec* at = v;
  while (n > 0) {
    const ssize_t w = ::writev(fd, at, static_cast<int>(n));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw TraceWriteError("cannot write " + path + ": " + std::strerror(errno));
    auto left = static_cast<size_t>(w);
    while (n > 0 && left >= at->iov_len) left -= at->iov_len, ++at, --n;
    if (n > 0) at->iov_base = static_cast<char*>(at->iov_base) + left, at->iov_len -= left;
  }
}

ParallelFiles::ParallelFiles(const std::vector<std::string>& paths) : files_(paths.size()) {
  for (size_t i = 0; i < paths.size(); ++i) {
    files_[i].path = paths[i];
    files_[i].fd = ::open(paths[i].c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (files_[i].fd < 0) {
      const std::string why = std::strerror(errno);
      for (size_t j = 0; j < i; ++j) ::close(files_[j].fd);
      throw TraceWriteError("cannot create " + paths[i] + ": " + why);
    }
    struct stat st {};
    if (::fstat(files_[i].fd, &st) == 0 && S_ISREG(st.st_mode)) {
      files_[i].had = static_cast<size_t>(st.st_size);
    }
  }
}

ParallelFiles::~ParallelFiles() {
  stop_threads();
  for (File& f : files_) {
    if (f.fd < 0) continue;
    // A failed write (close_all not reached): the file holds only the new bytes written, as
    // an emptied one would, not an earlier file's tail after them.
    const off_t end = ::lseek(f.fd, 0, SEEK_CUR);
    const bool longer = end >= 0 && f.had > static_cast<size_t>(end);
    if (longer && ::ftruncate(f.fd, end) != 0) f.had = 0;  // best effort: already failing
    ::close(f.fd);
  }
}

void ParallelFiles::start() {
  for (File& f : files_) {
    struct stat st {};
    const off_t at = ::lseek(f.fd, 0, SEEK_CUR);
    f.end = at > 0 ? static_cast<size_t>(at) : 0;
    f.reserved = f.end;
    f.reserving = ::fstat(f.fd, &st) == 0 && S_ISREG(st.st_mode);
  }
}

// The writer threads start with a second chunk: a trace of one chunk or less (a short launch
// of a run of thousands) is written by finish() on the caller's thread, without starting and
// joining a thread per file.
void ParallelFiles::spawn() {
  spawned_ = true;
  for (File& f : files_) f.thread = std::thread([this, &f] { run(f); });
}

// Best effort: a file system without fallocate, or one that is full, leaves the writes to
// allocate (and to report ENOSPC themselves). Ahead of the writes by as much as is written,
// up to kReserveBytes: a short file reserves (and cuts off at close) little.
void ParallelFiles::reserve(File& file, size_t bytes) {
  if (!file.reserving || file.end + bytes <= file.reserved) return;
  const size_t upto = file.end + bytes + std::min(kReserveBytes, file.end + bytes);
  if (::fallocate(file.fd, 0, static_cast<off_t>(file.reserved),
                  static_cast<off_t>(upto - file.reserved)) == 0) {
    file.reserved = upto;
  } else {
    file.reserving = false;
  }
}

Chunk* ParallelFiles::take() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (free_.empty() && chunks_.size() < kChunks) {
    chunks_.push_back(std::make_unique<Chunk>());
    chunks_.back()->grow(kChunkBytes);
    free_.push_back(chunks_.back().get());
  }
  changed_.wait(lock, [&] { return !free_.empty() || error_; });
  if (error_) {
    lock.unlock();
    raise_error();
  }
  Chunk* c = free_.back();
  free_.pop_back();
  c->used = 0;
  return c;
}

void ParallelFiles::submit(Chunk* chunk) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    chunk->pending = static_cast<int>(files_.size());
    for (File& f : files_) f.queue.push_back(chunk);
  }
  if (!spawned_ && ++submitted_ > 1) spawn();
  changed_.notify_all();
}

void ParallelFiles::run(File& file) {
  for (;;) {
    if (!spawned_ && file.queue.empty()) return;  // finish() writing here: all written
    Chunk* c = nullptr;
    bool failed = false;  // after an error, chunks are only released
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return !file.queue.empty() || file.done; });
      if (file.queue.empty()) return;
      c = file.queue.front();
      file.queue.pop_front();
      failed = error_ != nullptr;
    }
    try {
      if (!failed) {
        if (spawned_) reserve(file, c->used);  // one write alone gains nothing from it
        write_all(file.fd, std::string_view(c->data.get(), c->used), file.path);
        file.end += c->used;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    release(c);
  }
}

void ParallelFiles::release(Chunk* chunk) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--chunk->pending == 0) free_.push_back(chunk);
  }
  changed_.notify_all();
}

void ParallelFiles::stop_threads() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (File& f : files_) f.done = true;
  }
  changed_.notify_all();
  for (File& f : files_) {
    if (f.thread.joinable()) f.thread.join();
  }
}

void ParallelFiles::finish() {
  if (!spawned_) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (File& f : files_) f.done = true;
    }
    for (File& f : files_) run(f);  // the one chunk, on this thread
  }
  stop_threads();
  raise_error();
}

void ParallelFiles::raise_error() {
  std::exception_ptr e;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    e = error_;
  }
  if (e) std::rethrow_exception(e);
}

void ParallelFiles::close_all() {
  std::string failed;  // the first failure, with its reason (a later close may reset errno)
  for (File& f : files_) {
    // The writes are sequential (the header's rewrite aside), so the offset is the new end.
    const off_t end = f.fd >= 0 ? ::lseek(f.fd, 0, SEEK_CUR) : -1;
    const bool tail = f.reserved > f.end || (end >= 0 && f.had > static_cast<size_t>(end));
    if (tail && ::ftruncate(f.fd, end) != 0 && failed.empty())
      failed = f.path + ": " + std::strerror(errno);
    if (f.fd >= 0 && ::close(f.fd) != 0 && failed.empty())
      failed = f.path + ": " + std::strerror(errno);
    f.fd = -1;
  }
  if (!failed.empty()) throw TraceWriteError("cannot write " + failed);
}

}  // namespace pypto::tools
