/* rma_vs_lanes.c -- two candidate designs for flock's one-sided "window put".
 *
 * README. Should win_put use MPI-3 passive-target RMA, or an engine ("lane") thread
 * doing two-sided sends into always-posted receives? Both are timed against the raw
 * neighbour exchange of the same bytes. Exponential graph: rank r sends to
 * (r + 2^k) mod n, receives from (r - 2^k) mod n, for every 2^k < n. Each rank owns a
 * float32 tensor of B bytes and one B-byte slot per in-neighbour (slot k <- in[k]).
 * A timed round = "put my tensor to every out-neighbour and make sure it is delivered":
 *   floor  MPI_Irecv from all in-neighbours + MPI_Isend to all out-neighbours +
 *          MPI_Waitall (so unlike the others it also waits for *incoming* data).
 *   rma    MPI_Win_allocate(in-degree x B) and MPI_Win_lock_all(NOCHECK) once; per
 *          round MPI_Put into my slot at each target, MPI_Win_flush_all (-f: flush per
 *          target).
 *   lanes  a progress thread keeps one MPI_Irecv posted per in-neighbour (re-posted on
 *          arrival, bumping a version); the main thread hands it the round via an atomic
 *          counter and waits on a condvar; the thread MPI_Isends to every out-neighbour
 *          and polls MPI_Test with back-off (sched_yield, then nanosleep 1..50 us).
 *          Needs MPI_THREAD_MULTIPLE (skipped with a note otherwise); every design runs
 *          under that level so the comparison is fair.
 * Each round is preceded by an untimed MPI_Barrier so rounds line up across ranks.
 * Straggler mode (-m straggler|both): before each round every rank "computes" (sleeps,
 * no MPI in its main thread) 10 ms, the last rank 20 ms, so puts to the slow rank land
 * while it is outside MPI. to_slow_ms = worst median of the ranks that put to it: near
 * the normal time = "prompt" (no target participation needed), ~10 ms = "delayed"
 * (waited for the slow rank to enter MPI). floor is always delayed (waits for input).
 * Output (rank 0): per (mode, design, B) the worst per-rank median in ms, its ratio to
 * floor, straggler columns, and a check that every slot holds sender+1 at the end.
 * osc: rank 0 prints the component inferred from the window's info keys (report_osc)
 * and the MCA "osc" list read via MPI_T. Debian's openmpi-mca-params.conf sets
 * osc = ^ucx,pt2pt and btl = ^uct,openib,ofi; on this machine (OpenMPI 4.1.4, one node)
 * the default window then looks like osc/rdma, not osc/sm (osc_rdma_priority is 101).
 * Compare with --mca osc sm | rdma | pt2pt (the command line overrides the file; pt2pt
 * needs target-side progress, so it is the likeliest to show "delayed" as straggler).
 *
 * Build: mpicc -std=c11 -O2 -Wall -Wextra -pthread -o rma_vs_lanes rma_vs_lanes.c
 * Run:   mpirun --allow-run-as-root --oversubscribe -np 4 ./rma_vs_lanes
 *        mpirun ... -np 4 ./rma_vs_lanes -s 4K,1M,16M -i 50 -w 5 -m both
 *        mpirun ... --mca osc pt2pt -np 2 ./rma_vs_lanes -d rma,lanes -m straggler
 * Options: -s sizes (K/M suffix, multiple of 4; default 4K,1M,16M)  -i iterations (20)
 *   -w warm-up rounds (3)  -d designs (floor,rma,lanes)  -f flush per target
 *   -m normal|straggler|both (normal).
 * Caveat: with more ranks than cores (np 4 on 2 cores) lanes runs 2 threads per rank
 * and its back-off sleeps may dominate small sizes; read small-B numbers with care.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAX_DEG = 32, MAX_SIZES = 8, MAX_RANKS = 1024, TAG_FLOOR = 11, TAG_LANE = 22 };
enum { FAST_US = 10000, SLOW_US = 20000 }; /* straggler-mode "compute" per round */

enum { FLOOR, RMA, LANES, NDESIGN };
static const char *kDesign[NDESIGN] = {"floor", "rma", "lanes"};

typedef struct { int rank, n, deg, out[MAX_DEG], in[MAX_DEG]; } Graph; /* in-deg == out */

typedef struct { /* modes: bit 0 = normal, bit 1 = straggler */
  size_t sizes[MAX_SIZES];
  int nsizes, iters, warmup, flush_each, modes, want[NDESIGN];
} Opts;

/* One run of one design at one size. Fields are shared where the designs overlap. */
typedef struct {
  const Graph *g;
  const float *x; /* my tensor */
  size_t B;
  char *rbuf;     /* floor, lanes: deg x B receive slots (rma: the window itself) */
  int flush_each; /* rma */
  MPI_Win win;
  MPI_Aint disp[MAX_DEG]; /* rma: byte offset of my slot in each out-neighbour's window */
  int total;              /* lanes: rounds in this run = messages per in-neighbour */
  atomic_int req;         /* lanes: rounds requested by the main thread */
  int done;               /* lanes: rounds whose sends completed; guarded by mu */
  pthread_mutex_t mu; pthread_cond_t cv;
  int version[MAX_DEG]; /* lanes: arrivals per in-neighbour (lane thread only) */
} Ctx;

static Graph graph_make(int rank, int n) {
  Graph g = {.rank = rank, .n = n, .deg = 0};
  for (int s = 1; s < n && g.deg < MAX_DEG; s <<= 1, g.deg++) {
    g.out[g.deg] = (rank + s) % n;
    g.in[g.deg] = ((rank - s) % n + n) % n;
  }
  return g;
}

/* Index of `sender` among `target`'s in-neighbours = which slot of target it writes. */
static int slot_of(int n, int target, int sender) {
  Graph t = graph_make(target, n);
  for (int k = 0; k < t.deg; k++)
    if (t.in[k] == sender) return k;
  return -1;
}

static int count_of(const Ctx *c) { return (int)(c->B / sizeof(float)); }

static void sleep_ns(long ns) { nanosleep(&(struct timespec){0, ns}, NULL); } /* < 1 s */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Every slot must end up holding its in-neighbour's tensor (filled with sender+1). */
static int check_slots(const Graph *g, const char *buf, size_t B) {
  for (int k = 0; k < g->deg; k++) {
    const float *s = (const float *)(buf + (size_t)k * B);
    float want = (float)(g->in[k] + 1);
    if (s[0] != want || s[B / sizeof(float) - 1] != want) return 0;
  }
  return 1;
}

/* Untimed barrier (aligns rounds), optional emulated compute, then the timed round.
 * Returns this rank's median over the timed rounds. */
static double run_rounds(const Opts *o, int straggle, void (*fn)(Ctx *), Ctx *c) {
  double *t = malloc(sizeof(double) * o->iters);
  for (int it = 0; it < o->warmup + o->iters; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (straggle) sleep_ns(1000L * (c->g->rank == c->g->n - 1 ? SLOW_US : FAST_US));
    double t0 = MPI_Wtime();
    fn(c);
    if (it >= o->warmup) t[it - o->warmup] = MPI_Wtime() - t0;
  }
  double m = median(t, o->iters);
  free(t);
  return m;
}

/* ---------------------------------------------------------------- floor */
static void floor_round(Ctx *c) {
  const Graph *g = c->g;
  MPI_Request r[2 * MAX_DEG];
  for (int k = 0; k < g->deg; k++)
    MPI_Irecv(c->rbuf + (size_t)k * c->B, count_of(c), MPI_FLOAT, g->in[k], TAG_FLOOR,
              MPI_COMM_WORLD, &r[k]);
  for (int k = 0; k < g->deg; k++)
    MPI_Isend(c->x, count_of(c), MPI_FLOAT, g->out[k], TAG_FLOOR, MPI_COMM_WORLD,
              &r[g->deg + k]);
  MPI_Waitall(2 * g->deg, r, MPI_STATUSES_IGNORE);
}

static double run_floor(const Opts *o, int straggle, Ctx *c, int *ok) {
  c->rbuf = malloc((size_t)c->g->deg * c->B);
  double m = run_rounds(o, straggle, floor_round, c);
  *ok = check_slots(c->g, c->rbuf, c->B);
  free(c->rbuf);
  return m;
}

/* ---------------------------------------------------------------- rma */
static void rma_round(Ctx *c) {
  const Graph *g = c->g;
  for (int k = 0; k < g->deg; k++)
    MPI_Put(c->x, count_of(c), MPI_FLOAT, g->out[k], c->disp[k], count_of(c), MPI_FLOAT,
            c->win);
  if (!c->flush_each) MPI_Win_flush_all(c->win);
  else
    for (int k = 0; k < g->deg; k++) MPI_Win_flush(g->out[k], c->win);
}

/* Read a string control variable (here the MCA "osc" selection list) via MPI_T. */
static const char *cvar_string(const char *name) {
  static char buf[4096] = "?"; /* OpenMPI reports a string's count as its max length */
  int prov, idx, count;
  MPI_T_cvar_handle h;
  if (MPI_T_init_thread(MPI_THREAD_MULTIPLE, &prov) != MPI_SUCCESS) return buf;
  if (MPI_T_cvar_get_index(name, &idx) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) == MPI_SUCCESS) {
    if (count < (int)sizeof buf) MPI_T_cvar_read(h, buf);
    MPI_T_cvar_handle_free(&h);
  }
  MPI_T_finalize();
  return buf;
}

/* Is component `c` ruled out by the MCA osc list `sel` ("^a,b" excludes, "a,b" selects)? */
static int osc_excluded(const char *sel, const char *c) {
  if (!*sel || !strcmp(sel, "?")) return 0;
  return sel[0] == '^' ? strstr(sel, c) != NULL : strstr(sel, c) == NULL;
}

/* Cheap osc probe: in OpenMPI 4.1 osc/sm windows carry the info key "blocking_fence",
 * osc/rdma and osc/pt2pt only "no_locks"; the MCA list separates the last two.
 * (MPI_Win_shared_query can't tell: osc/sm rejects it on non-shared flavors.) */
static void report_osc(MPI_Win win, const Graph *g) {
  char v[MPI_MAX_INFO_VAL + 1];
  const char *guess = "unknown";
  int fence = 0, nolocks = 0;
  MPI_Info info;
  MPI_Win_get_info(win, &info);
  MPI_Info_get(info, "blocking_fence", MPI_MAX_INFO_VAL, v, &fence);
  MPI_Info_get(info, "no_locks", MPI_MAX_INFO_VAL, v, &nolocks);
  MPI_Info_free(&info);
  const char *sel = cvar_string("osc");
  if (fence) guess = "sm";
  else if (nolocks)
    guess = osc_excluded(sel, "pt2pt") ? "rdma" : osc_excluded(sel, "rdma") ? "pt2pt"
                                                                            : "rdma|pt2pt";
  if (g->rank == 0)
    printf("# osc: %s (inferred: info blocking_fence=%d no_locks=%d, MCA osc list \"%s\")\n",
           guess, fence, nolocks, sel);
}

static double run_rma(const Opts *o, int straggle, Ctx *c, int *ok) {
  static int reported = 0;
  const Graph *g = c->g;
  char *base = NULL;
  MPI_Win_allocate((MPI_Aint)g->deg * (MPI_Aint)c->B, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                   &base, &c->win);
  for (int k = 0; k < g->deg; k++)
    c->disp[k] = (MPI_Aint)slot_of(g->n, g->out[k], g->rank) * (MPI_Aint)c->B;
  if (!reported++) report_osc(c->win, g);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, c->win);
  double m = run_rounds(o, straggle, rma_round, c);
  /* Every origin has flushed; barrier + win_sync make the puts visible to local loads. */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_sync(c->win);
  *ok = check_slots(g, base, c->B);
  MPI_Win_unlock_all(c->win);
  MPI_Win_free(&c->win);
  return m;
}

/* ---------------------------------------------------------------- lanes */
static void lane_post_recv(Ctx *c, int k, MPI_Request *r) {
  MPI_Irecv(c->rbuf + (size_t)k * c->B, count_of(c), MPI_FLOAT, c->g->in[k], TAG_LANE,
            MPI_COMM_WORLD, r);
}

/* Test every posted receive; on arrival bump the version and re-post. 1 if any. */
static int lane_poll_recvs(Ctx *c, MPI_Request *rr) {
  int busy = 0;
  for (int k = 0; k < c->g->deg; k++) {
    int f = 0;
    if (c->version[k] >= c->total) continue; /* rr[k] already MPI_REQUEST_NULL */
    MPI_Test(&rr[k], &f, MPI_STATUS_IGNORE);
    if (!f) continue;
    busy = 1;
    if (++c->version[k] < c->total) lane_post_recv(c, k, &rr[k]);
  }
  return busy;
}

static int lane_recvs_done(const Ctx *c) {
  for (int k = 0; k < c->g->deg; k++)
    if (c->version[k] < c->total) return 0;
  return 1;
}

/* Spin politely: 15 sched_yield()s, then nanosleep 1 us doubling to 50 us. Linux's
 * default 50 us timer slack makes any sleep ~50 us+, which is part of the lane cost. */
static void backoff(int *idle, int busy) {
  if (busy) *idle = 0;
  else if (++*idle < 16) sched_yield();
  else {
    long ns = 1000L << (*idle - 16 > 6 ? 6 : *idle - 16);
    sleep_ns(ns > 50000 ? 50000 : ns);
  }
}

static void lane_send_all(Ctx *c, MPI_Request *sr) {
  for (int k = 0; k < c->g->deg; k++)
    MPI_Isend(c->x, count_of(c), MPI_FLOAT, c->g->out[k], TAG_LANE, MPI_COMM_WORLD, &sr[k]);
}

/* The emulated engine thread: sends on request, always receives. Exits once all its
 * sends completed and every expected message arrived, so nothing is left to cancel. */
static void *lane_thread(void *p) {
  Ctx *c = p;
  MPI_Request rr[MAX_DEG], sr[MAX_DEG];
  int sent = 0, sending = 0, idle = 0;
  for (int k = 0; k < c->g->deg; k++) lane_post_recv(c, k, &rr[k]);
  while (sent < c->total || sending || !lane_recvs_done(c)) {
    int busy = 0, f = 0;
    if (!sending && atomic_load_explicit(&c->req, memory_order_acquire) > sent) {
      lane_send_all(c, sr);
      sending = busy = 1, sent++;
    }
    if (sending) MPI_Testall(c->g->deg, sr, &f, MPI_STATUSES_IGNORE);
    if (sending && f) {
      sending = 0, busy = 1;
      pthread_mutex_lock(&c->mu);
      c->done = sent;
      pthread_cond_signal(&c->cv);
      pthread_mutex_unlock(&c->mu);
    }
    busy |= lane_poll_recvs(c, rr);
    backoff(&idle, busy);
  }
  return NULL;
}

/* Main-thread side of a round: hand off, then block until the lane reports done. */
static void lanes_round(Ctx *c) {
  int round = atomic_fetch_add_explicit(&c->req, 1, memory_order_release) + 1;
  pthread_mutex_lock(&c->mu);
  while (c->done < round) pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
}

static double run_lanes(const Opts *o, int straggle, Ctx *c, int *ok) {
  pthread_t th;
  c->rbuf = malloc((size_t)c->g->deg * c->B);
  c->total = o->warmup + o->iters;
  atomic_init(&c->req, 0);
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  pthread_create(&th, NULL, lane_thread, c);
  double m = run_rounds(o, straggle, lanes_round, c);
  pthread_join(th, NULL);
  *ok = check_slots(c->g, c->rbuf, c->B) && lane_recvs_done(c);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c->rbuf);
  return m;
}

/* ---------------------------------------------------------------- driver */
static void usage_exit(int rank) {
  if (rank == 0)
    fprintf(stderr, "usage: rma_vs_lanes [-s 4K,1M,16M] [-i iters] [-w warmup] "
                    "[-d floor,rma,lanes] [-m normal|straggler|both] [-f]\n");
  MPI_Finalize();
  exit(2);
}

static int parse_sizes(Opts *o, char *s) {
  o->nsizes = 0;
  for (char *t = strtok(s, ","); t && o->nsizes < MAX_SIZES; t = strtok(NULL, ",")) {
    char *end;
    size_t v = strtoull(t, &end, 10);
    if (*end == 'K' || *end == 'k') v <<= 10;
    if (*end == 'M' || *end == 'm') v <<= 20;
    if (v == 0 || v % sizeof(float) || v / sizeof(float) > 0x7fffffff) return 0;
    o->sizes[o->nsizes++] = v;
  }
  return o->nsizes > 0;
}

static Opts parse_opts(int argc, char **argv, int rank) {
  Opts o = {.iters = 20, .warmup = 3, .modes = 1, .want = {1, 1, 1}};
  char def[] = "4K,1M,16M";
  parse_sizes(&o, def);
  for (int c; (c = getopt(argc, argv, "s:i:w:d:m:fh")) != -1;) {
    switch (c) {
    case 's': if (!parse_sizes(&o, optarg)) usage_exit(rank); break;
    case 'i': o.iters = atoi(optarg); break;
    case 'w': o.warmup = atoi(optarg); break;
    case 'f': o.flush_each = 1; break;
    case 'm': o.modes = !strcmp(optarg, "both") ? 3 : !strcmp(optarg, "straggler") ? 2 : 1;
              break;
    case 'd':
      for (int d = 0; d < NDESIGN; d++) o.want[d] = strstr(optarg, kDesign[d]) != NULL;
      break;
    default: usage_exit(rank);
    }
  }
  if (o.iters < 1 || o.warmup < 0) usage_exit(rank);
  return o;
}

/* Gather per-rank medians; rank 0 prints worst median, ratio, straggler view, check.
 * Returns the worst median on rank 0 (0 elsewhere). */
static double report(const Graph *g, int straggle, int d, size_t B, double m, int ok,
                     double floor_ms) {
  double all[MAX_RANKS], worst = 0, to_slow = 0;
  int all_ok = 0, slow = g->n - 1;
  MPI_Gather(&m, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
  if (g->rank != 0) return 0;
  for (int r = 0; r < g->n; r++) {
    if (all[r] > worst) worst = all[r];
    if (r != slow && slot_of(g->n, slow, r) >= 0 && all[r] > to_slow) to_slow = all[r];
  }
  printf("%-9s %-6s %9zu %10.3f ", straggle ? "straggler" : "normal", kDesign[d], B,
         worst * 1e3);
  if (floor_ms > 0) printf("%7.2f ", worst / floor_ms);
  else printf("%7s ", "-");
  if (straggle)
    printf("%10.3f %8.3f %-7s ", to_slow * 1e3, all[slow] * 1e3,
           to_slow * 1e6 > 0.5 * (SLOW_US - FAST_US) ? "delayed" : "prompt");
  else printf("%10s %8s %-7s ", "-", "-", "-");
  printf("%s\n", all_ok ? "ok" : "FAILED");
  fflush(stdout);
  return worst;
}

static double (*const kRun[NDESIGN])(const Opts *, int, Ctx *, int *) = {
    run_floor, run_rma, run_lanes};

static void print_header(const Opts *o, int n, int prov) { /* rank 0 only */
  printf("# rma_vs_lanes np=%d iters=%d warmup=%d flush=%s thread=%s\n", n, o->iters,
         o->warmup, o->flush_each ? "per-target" : "all",
         prov == MPI_THREAD_MULTIPLE ? "MULTIPLE" : "NOT MULTIPLE (lanes skipped)");
  printf("%-9s %-6s %9s %10s %7s %10s %8s %-7s %s\n", "mode", "design", "bytes",
         "median_ms", "x_floor", "to_slow_ms", "slow_ms", "verdict", "check");
}

int main(int argc, char **argv) {
  int prov, rank, n;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  Opts o = parse_opts(argc, argv, rank);
  if (n < 2 || n > MAX_RANKS) usage_exit(rank);
  Graph g = graph_make(rank, n);
  size_t maxB = 0;
  for (int i = 0; i < o.nsizes; i++) maxB = o.sizes[i] > maxB ? o.sizes[i] : maxB;
  float *x = malloc(maxB);
  for (size_t i = 0; i < maxB / sizeof(float); i++) x[i] = (float)(rank + 1);
  if (rank == 0) print_header(&o, n, prov);
  for (int straggle = 0; straggle < 2; straggle++) {
    if (!(o.modes & (1 << straggle))) continue;
    for (int i = 0; i < o.nsizes; i++) {
      double floor_ms = -1; /* meaningful on rank 0 only, which prints the ratios */
      for (int d = 0; d < NDESIGN; d++) {
        if (!o.want[d] || (d == LANES && prov < MPI_THREAD_MULTIPLE)) continue;
        Ctx c = {.g = &g, .x = x, .B = o.sizes[i], .flush_each = o.flush_each};
        int ok = 0;
        double m = kRun[d](&o, straggle, &c, &ok);
        double worst = report(&g, straggle, d, o.sizes[i], m, ok, floor_ms);
        if (d == FLOOR) floor_ms = worst;
      }
    }
  }
  free(x);
  MPI_Finalize();
  return 0;
}
