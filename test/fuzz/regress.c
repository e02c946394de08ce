/* regress.c: replays a fuzz target's corpus without libFuzzer.
 *
 * An ordinary main linked with one fuzz_<name>.c: calls
 * LLVMFuzzerTestOneInput on every regular file of the directory given as
 * argv[1], in name order, and exits 0.  A crash or abort fails the ctest
 * run naturally.  Used by test/fuzz/CMakeLists.txt so that plain `ctest`
 * replays the committed corpora on every CI run. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_one(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return -1;
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fclose(f);
      return -1;
    }
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    uint8_t *nb = realloc(buf, cap * 2);
    if (!nb) free(buf);
    buf = nb;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    perror(path);
    free(buf);
    return -1;
  }
  /* An exact-size copy, so ASan catches reads past the input's end. */
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) {
    free(buf);
    return -1;
  }
  memcpy(exact, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  DIR *d = opendir(argv[1]);
  if (!d) {
    perror(argv[1]);
    return 1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof *names);
      if (!nn) return 1;
      names = nn;
    }
    names[n] = strdup(de->d_name);
    if (!names[n]) return 1;
    n++;
  }
  closedir(d);
  qsort(names, n, sizeof *names, cmp);
  int rc = 0, done = 0;
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(argv[1]) + strlen(names[i]) + 2;
    char *p = malloc(l);
    if (!p) return 1;
    snprintf(p, l, "%s/%s", argv[1], names[i]);
    struct stat st;
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
      if (run_one(p) != 0) rc = 1;
      else done++;
    }
    free(p);
    free(names[i]);
  }
  free(names);
  printf("%s: %d inputs replayed\n", argv[1], done);
  if (done == 0) {
    fprintf(stderr, "%s: empty corpus\n", argv[1]);
    return 1;
  }
  return rc;
}
