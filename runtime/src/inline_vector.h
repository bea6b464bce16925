// InlineVector<T, N>: a vector of trivially copyable elements that holds its first N in itself
// and goes to the heap only past them. A tensor's shape is one (rt::Shape): kernels copy, extend
// and derive shapes at every step (strides, a broadcast, an output's shape), and a std::vector
// allocates for each of them. The interface is std::vector's, as far as the runtime uses it.
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <span>
#include <type_traits>
#include <vector>

namespace quilt::rt {

template <class T, size_t N>
class InlineVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
  static_assert(N > 0);

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  InlineVector() = default;
  explicit InlineVector(size_t n) { resize(n); }
  InlineVector(size_t n, const T& value) { assign(n, value); }
  InlineVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  InlineVector(It first, It last) {
    assign(first, last);
  }
  // From the runtime's spans and the compiler's vectors (no allocation up to N elements).
  InlineVector(std::span<const T> values) { assign(values.begin(), values.end()); }
  InlineVector(const std::vector<T>& values) { assign(values.begin(), values.end()); }
  InlineVector(const InlineVector& other) { assign(other.begin(), other.end()); }
  InlineVector(InlineVector&& other) noexcept { Take(other); }
  ~InlineVector() { Release(); }

  InlineVector& operator=(const InlineVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  InlineVector& operator=(InlineVector&& other) noexcept {
    if (this != &other) {
      Release();
      Take(other);
    }
    return *this;
  }
  InlineVector& operator=(std::initializer_list<T> values) {
    assign(values.begin(), values.end());
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  iterator begin() { return data_; }
  iterator end() { return data_ + size_; }
  const_iterator begin() const { return data_; }
  const_iterator end() const { return data_ + size_; }
  const_iterator cbegin() const { return data_; }
  const_iterator cend() const { return data_ + size_; }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  operator std::span<const T>() const { return {data_, size_}; }
  std::vector<T> ToVector() const { return std::vector<T>(begin(), end()); }

  void reserve(size_t n) {
    if (n > capacity_) Grow(n);
  }
  void clear() { size_ = 0; }
  void resize(size_t n) { resize(n, T{}); }
  void resize(size_t n, const T& value) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = value;
    size_ = n;
  }
  void push_back(const T& value) {
    if (size_ == capacity_) [[unlikely]] {
      PushGrown(value);  // by value: `value` may be an element
    } else {
      data_[size_++] = value;
    }
  }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    push_back(T(std::forward<Args>(args)...));
    return back();
  }
  void pop_back() { --size_; }

  void assign(size_t n, const T& value) {
    T copy = value;
    size_ = 0;
    resize(n, copy);
  }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  void assign(It first, It last) {
    size_t n = static_cast<size_t>(std::distance(first, last));
    if (n > capacity_) [[unlikely]] {
      AssignGrown(first, last, n);
      return;
    }
    std::copy(first, last, data_);
    size_ = n;
  }
  void assign(std::initializer_list<T> values) { assign(values.begin(), values.end()); }

  iterator insert(const_iterator pos, const T& value) { return insert(pos, size_t{1}, value); }
  iterator insert(const_iterator pos, size_t n, const T& value) {
    T copy = value;
    size_t at = Open(pos, n);
    std::fill_n(data_ + at, n, copy);
    return data_ + at;
  }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  iterator insert(const_iterator pos, It first, It last) {
    InlineVector items(first, last);  // the range may be this vector's
    size_t at = Open(pos, items.size());
    std::copy(items.begin(), items.end(), data_ + at);
    return data_ + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<T> values) {
    return insert(pos, values.begin(), values.end());
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    auto at = static_cast<size_t>(first - data_);
    auto n = static_cast<size_t>(last - first);
    std::copy(data_ + at + n, data_ + size_, data_ + at);
    size_ -= n;
    return data_ + at;
  }
  void swap(InlineVector& other) noexcept {
    InlineVector t = std::move(other);
    other = std::move(*this);
    *this = std::move(t);
  }

  friend bool operator==(const InlineVector& a, const InlineVector& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend auto operator<=>(const InlineVector& a, const InlineVector& b) {
    return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const InlineVector& a, const std::vector<T>& b) {
    return a.size_ == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  bool OnHeap() const { return data_ != inline_; }
  void Release() {
    if (OnHeap()) std::free(data_);
    data_ = inline_;
    capacity_ = N;
    size_ = 0;
  }
  // Moves other's elements here (this is empty and inline), leaving other empty and inline.
  void Take(InlineVector& other) {
    if (other.OnHeap()) {
      data_ = other.data_;
      capacity_ = other.capacity_;
      other.data_ = other.inline_;
      other.capacity_ = N;
    } else {
      std::memcpy(inline_, other.inline_, other.size_ * sizeof(T));
    }
    size_ = other.size_;
    other.size_ = 0;
  }
  // The growth paths, out of line: a shape rarely leaves its inline room, and each use of the
  // vector inlines only the test.
  [[gnu::noinline]] void PushGrown(T value) {
    Grow(capacity_ * 2);
    data_[size_++] = value;
  }
  template <class It>
  [[gnu::noinline]] void AssignGrown(It first, It last, size_t n) {
    // `first` may point into this vector; keep the old memory until the copy is done.
    InlineVector fresh;
    fresh.Grow(n);
    std::copy(first, last, fresh.data_);
    fresh.size_ = n;
    *this = std::move(fresh);
  }
  [[gnu::noinline]] void Grow(size_t n) {
    n = std::max(n, 2 * N);
    auto* fresh = static_cast<T*>(std::malloc(n * sizeof(T)));
    if (!fresh) throw std::bad_alloc();
    if (size_) std::memcpy(fresh, data_, size_ * sizeof(T));
    if (OnHeap()) std::free(data_);
    data_ = fresh;
    capacity_ = n;
  }
  // Makes room for n elements at pos; returns pos's index.
  size_t Open(const_iterator pos, size_t n) {
    auto at = static_cast<size_t>(pos - data_);
    if (size_ + n > capacity_) Grow(std::max(size_ + n, capacity_ * 2));
    std::copy_backward(data_ + at, data_ + size_, data_ + size_ + n);
    size_ += n;
    return at;
  }

  T* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = N;
  T inline_[N];
};

}  // namespace quilt::rt
