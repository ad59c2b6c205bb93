// The launch planner's dependency index (the rule is pypto/compile/deps.py's): which earlier
// tasks a new task must follow, found from the windows of buffers it reads and writes rather
// than by looking at every earlier task.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pypto::plan {

// A window of a buffer: per dim [lo, hi), as lo0, hi0, lo1, hi1, ...
using Box = std::vector<int64_t>;

struct Use {
  int64_t root;            // the buffer's table index
  std::optional<Box> box;  // none: the whole buffer
  bool reads, writes;
};

// Task numbers as bits, stored from the word of the lowest: the tasks that used one window
// are mostly a few neighbours far up a long plan.
class TaskSet {
 public:
  bool empty() const { return words_.empty(); }
  void add(int64_t task);
  int64_t base() const { return base_; }  // the first stored word
  const std::vector<uint64_t>& words() const { return words_; }

 private:
  int64_t base_ = 0;
  std::vector<uint64_t> words_;
};

// A task set over the whole plan so far, for combining sets (one per lookup, reused).
class DenseSet {
 public:
  void reset(int64_t tasks);  // empty, room for task numbers below `tasks`
  void include(const TaskSet& s);
  void exclude(const TaskSet& s);
  void include(const DenseSet& s);
  void exclude(const DenseSet& s);
  bool has(int64_t task) const { return (words_[task >> 6] >> (task & 63)) & 1; }
  bool empty() const;
  void members(std::vector<int64_t>& out) const;  // ascending

 private:
  std::vector<uint64_t> words_;
  size_t lo_ = SIZE_MAX, hi_ = 0;  // the words that may be nonzero: [lo_, hi_)
  void touch(size_t lo, size_t hi);
};

struct Window {
  TaskSet readers, writers;
};

struct BoxHash {
  size_t operator()(const Box& b) const;
};

// The tasks that used windows of one buffer: by window, and all of them (a use of the whole
// buffer overlaps every window), the windows with a box ordered by where they start on the
// first dim (a box overlaps only those starting less than the longest one's length before).
struct Buffer {
  std::unordered_map<Box, size_t, BoxHash> by_box;
  std::vector<Window> windows;                     // by number (those with a box)
  std::vector<Box> boxes;                          // by number
  std::vector<std::pair<int64_t, size_t>> starts;  // (first-dim start, number), ascending
  int64_t longest = 0;                             // the longest window on the first dim
  std::optional<Window> whole;                     // the uses of the whole buffer
  Window all;
  TaskSet atomic;  // the tasks that only added into it atomically
};

struct Followed {
  std::vector<int64_t> tasks;                      // ascending
  std::vector<std::pair<int64_t, int64_t>> gates;  // (task, buffer): orders only atomic adds
};

class DepIndex {
 public:
  // The earlier tasks a task with `uses` must follow, then the task indexed as the next one.
  // `atomic`: the buffers it writes only by atomic adds (ascending); `parallel`: the
  // (loop run, iteration) of each pl.parallel loop it is in.
  Followed submit(const std::vector<Use>& uses, const std::vector<int64_t>& atomic,
                  const std::vector<std::pair<int64_t, int64_t>>& parallel);
  int64_t count() const { return count_; }

 private:
  std::unordered_map<int64_t, Buffer> buffers_;
  std::unordered_map<int64_t, TaskSet> loops_;                 // loop run -> its tasks
  std::map<std::pair<int64_t, int64_t>, TaskSet> iterations_;  // (run, iteration) -> tasks
  int64_t count_ = 0;
  DenseSet found_, siblings_, plain_;  // scratch, reused

  Followed follow(const std::vector<Use>& uses, const std::vector<int64_t>& atomic,
                  const std::vector<std::pair<int64_t, int64_t>>& parallel);
  void conflicts(const Use& u, DenseSet& out) const;
  void add(const std::vector<Use>& uses, const std::vector<int64_t>& atomic,
           const std::vector<std::pair<int64_t, int64_t>>& parallel);
};

}  // namespace pypto::plan
