// One byte stream written to several files at once, each by its own thread. Writing a large
// trace is bound by the kernel's copies into the page cache, not by formatting; with one
// writer thread per file those copies run beside the formatting and beside each other.
//
// The producer fills chunks taken from a small pool and hands each to every file; a chunk
// returns to the pool once all files have written it, so memory stays at a few chunks. A
// write error stops that file's thread and is raised to the producer at its next hand-off.
//
// A regular file's blocks are reserved ahead of the writes (fallocate, kReserveBytes at a
// time) and the unused tail cut off at close: on ext4 this takes a third off the kernel's
// time per written byte, which is most of what writing a large trace costs.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace pypto::tools {

// Writes all of `data` to `fd` (retrying short writes); throws TraceWriteError naming `path`.
void write_all(int fd, std::string_view data, const std::string& path);
// The pieces one after another, in one system call (writev) unless it writes short.
void write_all(int fd, std::initializer_list<std::string_view> pieces, const std::string& path);

struct Chunk {
  std::unique_ptr<char[]> data;  // not zeroed: only the pages a trace fills are touched
  size_t capacity = 0;
  size_t used = 0;
  void grow(size_t n) {  // before it is filled: the contents are not kept
    if (n > capacity) data.reset(new char[n]), capacity = n;
  }
  int pending = 0;  // files that have not written it yet
};

class ParallelFiles {
 public:
  static constexpr size_t kChunkBytes = size_t{1} << 20;
  static constexpr size_t kChunks = 8;
  static constexpr size_t kReserveBytes = size_t{64} << 20;

  // Opens (creates) every path, to be written over from its start: what a file held past the
  // new end is cut off by close_all, not emptied at the open (emptying a file that holds blocks
  // is an ext4 journal transaction, ~0.1 ms), as pypto/report/file_blocks.py's `rewritten`
  // does for the Python writers. Nothing is written yet.
  explicit ParallelFiles(const std::vector<std::string>& paths);
  ~ParallelFiles();  // stops and joins the threads if finish() was not reached
  ParallelFiles(const ParallelFiles&) = delete;
  ParallelFiles& operator=(const ParallelFiles&) = delete;

  int fd(size_t file) const { return files_[file].fd; }
  const std::string& path(size_t file) const { return files_[file].path; }
  // Ready to write: bytes written through fd() before this come first. The writer threads
  // start with the second chunk submitted (spawn()); until then nothing is written.
  void start();
  // An empty chunk to fill (allocated while the pool is below kChunks, else waits until a
  // chunk has been written).
  Chunk* take();
  // Queues a filled chunk on every file.
  void submit(Chunk* chunk);
  // Waits until everything submitted is written, joins the threads, raises the first error.
  void finish();
  // Cuts every file to what was written (a reserved tail, or what it held past that) and
  // closes it, reporting a failure.
  void close_all();

 private:
  struct File {
    std::string path;
    int fd = -1;
    size_t end = 0;          // bytes the writer thread has written, from where it started
    size_t reserved = 0;     // blocks reserved up to here
    size_t had = 0;          // a regular file's length when opened
    bool reserving = false;  // a regular file whose file system can reserve
    std::deque<Chunk*> queue;
    bool done = false;  // no more chunks will come
    std::thread thread;
  };
  void run(File& file);
  void spawn();
  static void reserve(File& file, size_t bytes);
  void release(Chunk* chunk);
  void raise_error();
  void stop_threads();

  std::vector<File> files_;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  std::vector<Chunk*> free_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::exception_ptr error_;
  bool spawned_ = false;  // the writer threads started (spawn())
  size_t submitted_ = 0;  // chunks submitted so far
};

}  // namespace pypto::tools
