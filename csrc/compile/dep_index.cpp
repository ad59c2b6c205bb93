#include "compile/dep_index.hpp"

#include <algorithm>
#include <stdexcept>

namespace pypto::plan {

void TaskSet::add(int64_t task) {
  const int64_t word = task >> 6;
  const uint64_t bit = uint64_t{1} << (task & 63);
  if (words_.empty()) {
    base_ = word;
    words_.push_back(bit);
    return;
  }
  if (word < base_) {  // tasks come in ascending order; kept general all the same
    words_.insert(words_.begin(), static_cast<size_t>(base_ - word), 0);
    base_ = word;
  }
  const auto at = static_cast<size_t>(word - base_);
  if (at >= words_.size()) words_.resize(at + 1, 0);
  words_[at] |= bit;
}

void DenseSet::reset(int64_t tasks) {
  const auto n = static_cast<size_t>((tasks + 63) >> 6);
  if (lo_ < hi_)
    std::fill(words_.begin() + static_cast<ptrdiff_t>(lo_),
              words_.begin() + static_cast<ptrdiff_t>(hi_), 0);
  if (words_.size() < n) words_.resize(n, 0);
  lo_ = SIZE_MAX;
  hi_ = 0;
}

void DenseSet::touch(size_t lo, size_t hi) {
  lo_ = std::min(lo_, lo);
  hi_ = std::max(hi_, hi);
}

void DenseSet::include(const TaskSet& s) {
  if (s.empty()) return;
  const auto base = static_cast<size_t>(s.base());
  const std::vector<uint64_t>& w = s.words();
  for (size_t i = 0; i < w.size(); ++i) words_[base + i] |= w[i];
  touch(base, base + w.size());
}

void DenseSet::exclude(const TaskSet& s) {
  const auto base = static_cast<size_t>(s.base());
  const std::vector<uint64_t>& w = s.words();
  for (size_t i = 0; i < w.size(); ++i) words_[base + i] &= ~w[i];
}

void DenseSet::include(const DenseSet& s) {
  for (size_t i = s.lo_; i < s.hi_; ++i) words_[i] |= s.words_[i];
  if (s.lo_ < s.hi_) touch(s.lo_, s.hi_);
}

void DenseSet::exclude(const DenseSet& s) {
  const size_t lo = std::max(lo_, s.lo_), hi = std::min(hi_, s.hi_);
  for (size_t i = lo; i < hi; ++i) words_[i] &= ~s.words_[i];
}

bool DenseSet::empty() const {
  for (size_t i = lo_; i < hi_; ++i)
    if (words_[i] != 0) return false;
  return true;
}

void DenseSet::members(std::vector<int64_t>& out) const {
  for (size_t i = lo_; i < hi_; ++i) {
    for (uint64_t w = words_[i]; w != 0; w &= w - 1) {
      out.push_back(static_cast<int64_t>(i * 64 + static_cast<size_t>(__builtin_ctzll(w))));
    }
  }
}

size_t BoxHash::operator()(const Box& b) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the bounds
  for (int64_t v : b) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
  return static_cast<size_t>(h);
}

namespace {

bool overlap(const Box& a, const Box& b) {
  for (size_t d = 0; d + 1 < std::min(a.size(), b.size()); d += 2)
    if (!(a[d] < b[d + 1] && b[d] < a[d + 1])) return false;
  return true;
}

// The windows of `b` that share an element with `box` (none: the whole buffer), in turn.
template <class Fn>
void for_overlapping(const Buffer& b, const std::optional<Box>& box, Fn fn) {
  if (!box) return fn(b.all);
  if (b.whole) fn(*b.whole);
  if (box->empty()) throw std::invalid_argument("a window of no dims");
  const int64_t lo = (*box)[0], hi = (*box)[1];
  auto it = std::lower_bound(b.starts.begin(), b.starts.end(),
                             std::pair<int64_t, size_t>{lo - b.longest + 1, 0});
  for (; it != b.starts.end() && it->first < hi; ++it) {
    if (overlap(*box, b.boxes[it->second])) fn(b.windows[it->second]);
  }
}

Window& window_of(Buffer& b, const std::optional<Box>& box) {
  if (!box) {
    if (!b.whole) b.whole.emplace();
    return *b.whole;
  }
  if (box->empty()) throw std::invalid_argument("a window of no dims");
  auto [it, fresh] = b.by_box.try_emplace(*box, b.windows.size());
  if (fresh) {
    const std::pair<int64_t, size_t> start{(*box)[0], b.windows.size()};
    b.starts.insert(std::upper_bound(b.starts.begin(), b.starts.end(), start), start);
    b.boxes.push_back(*box);
    b.windows.emplace_back();
    b.longest = std::max(b.longest, (*box)[1] - (*box)[0]);
  }
  return b.windows[it->second];
}

}  // namespace

// The earlier tasks whose windows conflict with `u`: those that wrote an overlapping window,
// and if `u` writes, those that read one.
void DepIndex::conflicts(const Use& u, DenseSet& out) const {
  const auto found = buffers_.find(u.root);
  if (found == buffers_.end()) return;
  for_overlapping(found->second, u.box, [&](const Window& w) {
    out.include(w.writers);
    if (u.writes) out.include(w.readers);
  });
}

Followed DepIndex::follow(const std::vector<Use>& uses, const std::vector<int64_t>& atomic,
                          const std::vector<std::pair<int64_t, int64_t>>& parallel) {
  Followed out;
  siblings_.reset(count_);  // tasks of other iterations of the task's pl.parallel loops
  for (const auto& [run, it] : parallel) {
    const auto loop = loops_.find(run);
    if (loop == loops_.end()) continue;
    DenseSet mine;
    mine.reset(count_);
    mine.include(loop->second);
    const auto own = iterations_.find({run, it});
    if (own != iterations_.end()) mine.exclude(own->second);
    siblings_.include(mine);
  }
  found_.reset(count_);
  if (atomic.empty()) {  // the common case: every buffer orders alike, so one set for all
    for (const Use& u : uses) conflicts(u, found_);
    found_.exclude(siblings_);
    found_.members(out.tasks);
    return out;
  }
  // Per buffer, the earlier tasks it orders this one after; a buffer both only add into
  // atomically orders the adds, not the start (the gates).
  std::map<int64_t, DenseSet> shared;
  for (const Use& u : uses) {
    const auto buffer = buffers_.find(u.root);
    if (buffer == buffers_.end()) continue;
    auto [entry, fresh] = shared.try_emplace(u.root);
    if (fresh) entry->second.reset(count_);
    DenseSet mine;
    mine.reset(count_);
    conflicts(u, mine);
    mine.exclude(siblings_);
    if (std::binary_search(atomic.begin(), atomic.end(), u.root))
      mine.exclude(buffer->second.atomic);
    entry->second.include(mine);
  }
  plain_.reset(count_);
  for (const auto& [root, tasks] : shared) {
    found_.include(tasks);
    if (!std::binary_search(atomic.begin(), atomic.end(), root)) plain_.include(tasks);
  }
  found_.members(out.tasks);
  DenseSet gated;
  gated.reset(count_);
  gated.include(found_);
  gated.exclude(plain_);
  std::vector<int64_t> gated_tasks;
  gated.members(gated_tasks);
  for (int64_t task : gated_tasks) {
    for (int64_t root : atomic) {
      const auto s = shared.find(root);
      if (s != shared.end() && s->second.has(task)) out.gates.emplace_back(task, root);
    }
  }
  return out;
}

void DepIndex::add(const std::vector<Use>& uses, const std::vector<int64_t>& atomic,
                   const std::vector<std::pair<int64_t, int64_t>>& parallel) {
  const int64_t task = count_++;
  for (const Use& u : uses) {
    Buffer& b = buffers_[u.root];
    Window& w = window_of(b, u.box);
    if (u.reads) {
      w.readers.add(task);
      b.all.readers.add(task);
    }
    if (u.writes) {
      w.writers.add(task);
      b.all.writers.add(task);
    }
    if (std::binary_search(atomic.begin(), atomic.end(), u.root)) b.atomic.add(task);
  }
  for (const auto& [run, it] : parallel) {
    loops_[run].add(task);
    iterations_[{run, it}].add(task);
  }
}

Followed DepIndex::submit(const std::vector<Use>& uses, const std::vector<int64_t>& atomic,
                          const std::vector<std::pair<int64_t, int64_t>>& parallel) {
  Followed out = follow(uses, atomic, parallel);
  add(uses, atomic, parallel);
  return out;
}

}  // namespace pypto::plan
