/* A target region with num_teams and thread_limit clauses: LLVM 16
 * records them as NumTeamsClause and ThreadLimitClause. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int n = 4096;
  double *a = malloc(n * sizeof(double));
  for (int i = 0; i < n; i++)
    a[i] = i * 0.5;
#pragma omp target teams distribute parallel for num_teams(4) thread_limit(64) map(tofrom : a[0:n])
  for (int i = 0; i < n; i++)
    a[i] = a[i] * a[i] + 1.0;
  printf("%f\n", a[n - 1]);
  return 0;
}
