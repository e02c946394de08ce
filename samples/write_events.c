/* write_events.c: writes one of every kind of TensorBoard summary into
 * ./log_dir/demo (or the run directory given as the one argument) with
 * tbexport's event writer, and prints what it wrote.
 *
 * Build against the installed package:
 *   cc write_events.c $(pkg-config --cflags --libs tbexport)
 * or in CMake: find_package(tbexport) + target_link_libraries(... tbexport::tbexport).
 * Then: tensorboard --logdir ./log_dir
 *
 * Every value, step and wall time is deterministic (wall times start at
 * 1700000000 s), so scripts/check_tensorboard.py knows what to expect. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tbexport.h>

#define T0 1700000000.0
#define NSTEPS 50

static int check(int rc, const char *what) {
  if (rc < 0) fprintf(stderr, "write_events: %s: %s\n", what, tbe_strerror(rc));
  return rc;
}

/* A small deterministic generator (xorshift64*), uniform in [0, 1). */
static unsigned long long rng_state = 0x9E3779B97F4A7C15ull;
static double uniform(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

int main(int argc, char **argv) {
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    fprintf(stderr, "usage: write_events [RUN_DIR]   (default: log_dir/demo)\n");
    return 2;
  }
  const char *run = argc == 2 ? argv[1] : "log_dir/demo";
  tbe_writer *w;
  if (check(tbe_writer_open(&w, run, NULL), run) < 0) return 1;
  printf("writing %s\n", tbe_writer_path(w));
  int rc = 0;

  /* Scalars: two series over 50 steps. */
  double lr = 0.1;
  for (int s = 0; s < NSTEPS && rc == 0; s++, lr *= 0.95) {
    rc = check(tbe_writer_add_scalar(w, "loss/train", 1.0 / (s + 1), s, T0 + s), "loss/train");
    if (rc == 0) rc = check(tbe_writer_add_scalar(w, "lr", lr, s, T0 + s), "lr");
  }
  printf("scalars     loss/train = 1/(s+1), lr = 0.1*0.95^s   steps 0..%d\n", NSTEPS - 1);

  /* Histograms: 1000 values spread around a mean that moves with the step. */
  static double vals[1000];
  for (int s = 0; s < NSTEPS && rc == 0; s += 10) {
    for (int i = 0; i < 1000; i++) vals[i] = (uniform() - 0.5) * 2.0 + s / 10.0;
    rc = check(tbe_writer_add_histogram(w, "weights", vals, 1000, s, T0 + s), "weights");
  }
  const double limits[] = {0.0, 1.0, 2.0, 3.0};
  const double counts[] = {0.0, 1.0, 2.0, 3.0};
  if (rc == 0)
    rc = check(tbe_writer_add_histogram_raw(w, "raw_hist", 0.5, 2.5, 6, 10, 20, limits, counts, 4,
                                            0, T0),
               "raw_hist");
  printf("histograms  weights (1000 values, steps 0,10,20,30,40), raw_hist (3 buckets)\n");

  /* Text (markdown). */
  if (rc == 0) rc = check(tbe_writer_add_text(w, "notes", "hello **tbexport**", 0, T0), "notes");
  if (rc == 0) rc = check(tbe_writer_add_text(w, "notes", "second *note*", 1, T0 + 1), "notes");
  printf("text        notes (steps 0, 1)\n");

  /* Images: an RGB gradient 32x16, a gray 8x8 checkerboard, an RGBA 16x16. */
  static uint8_t rgb[16 * 32 * 3], gray[8 * 8], rgba[16 * 16 * 4];
  for (int y = 0; y < 16; y++)
    for (int x = 0; x < 32; x++) {
      uint8_t *p = rgb + (y * 32 + x) * 3;
      p[0] = (uint8_t)(x * 8);
      p[1] = (uint8_t)(y * 16);
      p[2] = 128;
    }
  for (int i = 0; i < 64; i++) gray[i] = ((i / 8 + i % 8) % 2) ? 255 : 0;
  for (int i = 0; i < 256; i++) {
    rgba[4 * i] = (uint8_t)i;
    rgba[4 * i + 1] = (uint8_t)(255 - i);
    rgba[4 * i + 2] = 0;
    rgba[4 * i + 3] = (uint8_t)(i < 128 ? 255 : 128);
  }
  if (rc == 0)
    rc = check(tbe_writer_add_image(w, "images/gradient", rgb, sizeof rgb, 32, 16, 3, 0, T0),
               "images/gradient");
  if (rc == 0)
    rc = check(tbe_writer_add_image(w, "images/checker", gray, sizeof gray, 8, 8, 1, 0, T0),
               "images/checker");
  if (rc == 0)
    rc = check(tbe_writer_add_image(w, "images/rgba", rgba, sizeof rgba, 16, 16, 4, 0, T0),
               "images/rgba");
  printf("images      images/gradient 32x16 RGB, images/checker 8x8 gray, images/rgba 16x16 RGBA\n");

  /* PR curve: 100 samples, label = (i % 3 != 0), prediction i/99. */
  uint8_t labels[100];
  float preds[100];
  for (int i = 0; i < 100; i++) {
    labels[i] = (uint8_t)(i % 3 != 0);
    preds[i] = (float)i / 99.0f;
  }
  if (rc == 0) rc = check(tbe_writer_add_pr_curve(w, "pr", labels, preds, 100, 0, 0, T0), "pr");
  printf("pr curve    pr (100 samples, 127 thresholds)\n");

  /* Custom scalars layout. */
  const char *loss_tags[] = {"loss/train"};
  const char *lr_band[] = {"lr", "lr", "lr"};
  const tbe_chart charts[] = {{"loss", 0, loss_tags, 1}, {"lr band", 1, lr_band, 3}};
  const tbe_category cats[] = {{"Train", charts, 2, 0}};
  if (rc == 0) rc = check(tbe_writer_set_custom_scalars_layout(w, cats, 1), "layout");
  printf("layout      custom scalars: Train / loss (multiline), lr band (margin)\n");

  /* Hyper-parameters in the sub-run demo/hp. */
  const tbe_hparam hp[] = {{"lr", TBE_HPARAM_NUMBER, 0.1, NULL, 0},
                           {"batch_size", TBE_HPARAM_NUMBER, 32, NULL, 0},
                           {"optimizer", TBE_HPARAM_STRING, 0, "sgd", 0},
                           {"amp", TBE_HPARAM_BOOL, 0, NULL, 1}};
  const tbe_metric metrics[] = {{"hparam/accuracy", 0.9}, {"hparam/loss", 0.25}};
  if (rc == 0) rc = check(tbe_writer_add_hparams(w, hp, 4, metrics, 2, "hp", 0, T0), "hparams");
  printf("hparams     lr=0.1 batch_size=32 optimizer=sgd amp=true -> hparam/accuracy=0.9 "
         "hparam/loss=0.25 (run demo/hp)\n");

  int crc = tbe_writer_close(w);
  if (rc == 0) rc = check(crc, "close");
  if (rc < 0) return 1;
  const char *slash = strrchr(run, '/');
  printf("done; view with: tensorboard --logdir %.*s\n", slash ? (int)(slash - run) : 1,
         slash ? run : ".");
  return 0;
}
