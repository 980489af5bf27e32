/* A reduction over a large array, the trip count passed by value. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  long n = 1 << 20;
  double *v = malloc(n * sizeof(double));
  for (long i = 0; i < n; i++)
    v[i] = (double)(i % 1000) * 0.5;
  double sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum) map(to : v[0:n])
  for (long i = 0; i < n; i++)
    sum += v[i];
  printf("%f\n", sum);
  return 0;
}
