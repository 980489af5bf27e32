// C++ as it is written: a function template instantiated twice, whose
// target region calls a lambda.
#include <cstdio>
#include <vector>

template <typename T> void scale(std::vector<T> &v, T by) {
  T *p = v.data();
  long n = (long)v.size();
  auto f = [by](T x) { return x * by + T(1); };
#pragma omp target teams distribute parallel for map(tofrom : p[0:n])
  for (long i = 0; i < n; i++)
    p[i] = f(p[i]);
}

int main() {
  std::vector<float> a(70000, 2.0f);
  std::vector<double> b(30000, 0.5);
  scale(a, 3.0f);
  scale(b, 4.0);
  std::printf("%f %f\n", a[69999], b[29999]);
  return 0;
}
