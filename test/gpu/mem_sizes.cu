// mem_sizes.cu: a CUDA program whose allocations are known, for
// memory_check.py (issue 30): each kind of allocation CUPTI reports, with
// sizes that are not multiples of any page, in a fixed order, and the
// expected events printed as JSON on stdout ({"events": [[op, bytes,
// kind], ...]}: op +1 allocation, -1 free, kind device|pinned|managed|pool).
#include <cstdio>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

__global__ void touch(char *p, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) p[i] = 1;
}

int main() {
  const size_t sizes[] = {1000003, 64u << 20, 123457, 8u << 20};
  void *p[4];
  printf("{\"events\": [");
  const char *sep = "";
  for (int i = 0; i < 4; i++) {
    CK(cudaMalloc(&p[i], sizes[i]));
    touch<<<(unsigned)((sizes[i] + 255) / 256), 256>>>((char *)p[i], sizes[i]);
    printf("%s[1, %zu, \"device\"]", sep, sizes[i]);
    sep = ", ";
  }
  CK(cudaDeviceSynchronize());
  CK(cudaFree(p[1]));
  printf("%s[-1, %zu, \"device\"]", sep, sizes[1]);
  void *h;
  CK(cudaMallocHost(&h, 3000017));
  printf("%s[1, %d, \"pinned\"]", sep, 3000017);
  void *m;
  CK(cudaMallocManaged(&m, 5000011));
  printf("%s[1, %d, \"managed\"]", sep, 5000011);
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  void *a;
  CK(cudaMallocAsync(&a, 7000003, s));
  printf("%s[1, %d, \"pool\"]", sep, 7000003);
  CK(cudaFreeAsync(a, s));
  printf("%s[-1, %d, \"pool\"]", sep, 7000003);
  CK(cudaStreamSynchronize(s));
  CK(cudaFree(m));
  printf("%s[-1, %d, \"managed\"]", sep, 5000011);
  CK(cudaFreeHost(h));
  printf("%s[-1, %d, \"pinned\"]", sep, 3000017);
  for (int i = 0; i < 4; i++) {
    if (i == 1) continue;
    CK(cudaFree(p[i]));
    printf("%s[-1, %zu, \"device\"]", sep, sizes[i]);
  }
  printf("]}\n");
  return 0;
}
