// InlineVector against std::vector: the same operations on both, the same elements after each,
// inline (no heap) up to its capacity and on the heap past it.
#include "runtime/src/inline_vector.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace quilt::rt {
namespace {

using Small = InlineVector<int64_t, 4>;

void ExpectSame(const Small& got, const std::vector<int64_t>& want, const char* after) {
  ASSERT_EQ(got.size(), want.size()) << after;
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << after << ", element " << i;
  EXPECT_TRUE(got == want) << after;
  EXPECT_GE(got.capacity(), got.size()) << after;
}

TEST(InlineVector, StaysInItselfUpToItsCapacity) {
  Small v = {1, 2, 3, 4};
  const int64_t* inline_data = v.data();
  EXPECT_EQ(v.capacity(), 4u);
  v.push_back(5);  // past the capacity: on the heap, the elements moved with it
  EXPECT_NE(v.data(), inline_data);
  ExpectSame(v, {1, 2, 3, 4, 5}, "push_back past the capacity");
  Small moved = std::move(v);  // a heap vector moves its memory
  ExpectSame(moved, {1, 2, 3, 4, 5}, "move");
  EXPECT_TRUE(v.empty());  // NOLINT: the moved-from vector is empty and usable
  v.push_back(7);
  ExpectSame(v, {7}, "push_back after the move");
  Small copy = moved;
  copy[0] = 9;
  ExpectSame(moved, {1, 2, 3, 4, 5}, "a copy's change leaves the original");
  ExpectSame(copy, {9, 2, 3, 4, 5}, "copy");
}

// As a product's batch offsets use it, filled and cleared run after run: elements in place up to
// its size, on the heap past it, copied either way; checked against a std::vector.
TEST(InlineVector, HoldsItsElementsInPlaceThenOnTheHeapRunAfterRun) {
  InlineVector<int64_t, 3> v;
  std::vector<int64_t> want;
  for (int round = 0; round < 3; ++round) {
    const int64_t count = round == 1 ? 2 : 7;
    for (int64_t i = 0; i < count; ++i) {
      v.push_back(i * 10 + round);
      want.push_back(i * 10 + round);
      ASSERT_EQ(v.size(), want.size());
      EXPECT_EQ(std::vector<int64_t>(v.begin(), v.end()), want) << "round " << round;
    }
    InlineVector<int64_t, 3> copy = v;
    EXPECT_EQ(std::vector<int64_t>(copy.begin(), copy.end()), want);
    EXPECT_EQ(copy[count - 1], want.back());
    v.clear();
    want.clear();
    EXPECT_TRUE(v.empty());
  }
}

TEST(InlineVector, EveryOperationAsStdVectorDoesIt) {
  std::mt19937 rng(5);
  Small v;
  std::vector<int64_t> w;
  for (int step = 0; step < 4000; ++step) {
    int64_t x = static_cast<int64_t>(rng() % 100);
    size_t at = w.empty() ? 0 : rng() % (w.size() + 1);
    switch (rng() % 11) {
      case 0:
        v.push_back(x);
        w.push_back(x);
        break;
      case 1:
        if (!w.empty()) {
          v.pop_back();
          w.pop_back();
        }
        break;
      case 2:
        v.insert(v.begin() + at, x);
        w.insert(w.begin() + static_cast<std::ptrdiff_t>(at), x);
        break;
      case 3: {
        size_t n = rng() % 6;
        v.insert(v.begin() + at, n, x);
        w.insert(w.begin() + static_cast<std::ptrdiff_t>(at), n, x);
        break;
      }
      case 4:
        if (!w.empty()) {  // a range of the vector itself, inserted into it
          size_t b = rng() % w.size(), e = b + rng() % (w.size() - b + 1);
          std::vector<int64_t> part(w.begin() + static_cast<std::ptrdiff_t>(b),
                                    w.begin() + static_cast<std::ptrdiff_t>(e));
          v.insert(v.begin() + at, v.begin() + b, v.begin() + e);
          w.insert(w.begin() + static_cast<std::ptrdiff_t>(at), part.begin(), part.end());
        }
        break;
      case 5:
        if (!w.empty()) {
          size_t b = rng() % w.size(), e = b + rng() % (w.size() - b + 1);
          v.erase(v.begin() + b, v.begin() + e);
          w.erase(w.begin() + static_cast<std::ptrdiff_t>(b),
                  w.begin() + static_cast<std::ptrdiff_t>(e));
        }
        break;
      case 6: {
        size_t n = rng() % 12;
        v.resize(n, x);
        w.resize(n, x);
        break;
      }
      case 7: {
        size_t n = rng() % 12;
        v.assign(n, x);
        w.assign(n, x);
        break;
      }
      case 8:
        if (!w.empty()) {  // assigned from a range of itself
          size_t b = rng() % w.size();
          std::vector<int64_t> part(w.begin() + static_cast<std::ptrdiff_t>(b), w.end());
          v.assign(v.begin() + b, v.end());
          w = part;
        }
        break;
      case 9: {
        Small other(w.begin(), w.end());
        other.swap(v);
        break;
      }
      default:
        if (rng() % 8 == 0) {
          v.clear();
          w.clear();
        }
        break;
    }
    ExpectSame(v, w, "a random operation");
    if (testing::Test::HasFatalFailure()) return;
  }
}

TEST(InlineVector, ComparesAsItsElements) {
  EXPECT_TRUE((Small{1, 2} == Small{1, 2}));
  EXPECT_FALSE((Small{1, 2} == Small{1, 2, 3}));
  EXPECT_TRUE((Small{1, 2} < Small{1, 3}));
  EXPECT_TRUE((Small{1, 2} < Small{1, 2, 0}));
  EXPECT_TRUE((Small{1, 2, 3, 4, 5} > Small{1, 2, 3, 4}));
  std::vector<int64_t> w = {3, 4, 5, 6, 7, 8};
  Small from(w);
  std::span<const int64_t> s = from;
  EXPECT_EQ(std::vector<int64_t>(s.begin(), s.end()), w);
  EXPECT_EQ(from.ToVector(), w);
}

}  // namespace
}  // namespace quilt::rt
