/*
 * runner.c - test and demo runner of the edgecode C runtime (host, Cortex-M and
 * RISC-V; AVR has its own, avr/runner.c).
 *
 * Opens the image compiled into the program (model_image.c defines
 * ec_model_image / ec_model_image_size, 16-byte aligned), then reads frames,
 * one example per line of whitespace-separated integers (ec_frame_width of
 * them: the rows of device.encode(X)), and prints one line per example: the
 * label, then the decision integers, space-separated (NB: "label accumulator";
 * ECOC: label, m symbols, c doubled distances; SSBC: label (-1 without a
 * table), k code bits, then with a table the nearest distance).
 *
 *   runner                      frames on stdin (or from EC_FRAMES_FILE)
 *   runner --image FILE         the image read from FILE instead (host)
 *   runner --image FILE --check only open it: prints "ok" (exit 0) or
 *                               "error <code> <name>" (exit 2)
 *
 * Exit status: 0 every frame ran; 1 some frame line was refused (that line
 * printed "error <code> <name>", the others ran); 2 the image was refused
 * ("error <code> <name>"), a buffer is too small for the model, or bad usage.
 * Blank lines are skipped.
 *
 * Compile-time settings (model_config.h of `edgecode firmware` sets the first
 * three from the model):
 *   EC_WORKSPACE_BYTES  workspace buffer (default 65536)
 *   EC_FRAME_WIDTH / EC_FRAME_MAX        frame buffer entries (default 16384)
 *   EC_DECISION_LEN / EC_DECISION_MAX    decision buffer entries (default 4096)
 *   (with --image, i.e. on the host, the buffers are at least 4 MiB of
 *   workspace, 2^20 frame entries and 2^16 decision integers, since the file
 *   may hold a bigger model than the compiled-in one)
 *   EC_FRAMES_FILE      read frames from this file instead of stdin (QEMU
 *                       semihosting gives the guest no stdin)
 *   EC_IMAGE_MAX        largest --image file (default 1 MiB)
 *   EC_NO_FILE_IO       no --image option
 *   EC_NO_BUILTIN_IMAGE no compiled-in image (--image is then required)
 *   EC_NO_ARGS          main(void) (set automatically on bare-metal ARM, whose
 *                       startup calls main without arguments)
 *   EC_COUNTER_HEADER   a header defining uint32_t ec_counter(void), a
 *                       free-running instruction (or cycle) counter; with
 *   EC_COUNTS_FILE      the runner writes to this file the counter's
 *                       difference across ec_model_open ("open_instructions N")
 *                       and across each ec_infer ("infer_instructions N N ...")
 *
 * Unlike the runtime, the runner uses <stdio.h>; it formats and parses
 * 64-bit integers itself (newlib-nano's printf has no %lld).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#include "edgecode_rt.h"
#ifdef EC_COUNTER_HEADER
#include EC_COUNTER_HEADER
#endif

#if !defined(EC_NO_ARGS) && defined(__arm__) && !defined(__linux__)
#define EC_NO_ARGS
#endif
#if defined(EC_NO_ARGS) && !defined(EC_NO_FILE_IO)
#define EC_NO_FILE_IO
#endif

/* Buffers: the sizes model_config.h gives for the compiled-in model; with
   --image (host) at least EC_HOST_*, since the file may hold another model. */
#ifdef EC_NO_FILE_IO
#define EC_HOST_WORKSPACE 0
#define EC_HOST_FRAME 0
#define EC_HOST_DECISION 0
#else
#define EC_HOST_WORKSPACE (4L * 1024L * 1024L)
#define EC_HOST_FRAME (1L << 20)
#define EC_HOST_DECISION (1L << 16)
#endif
#define EC_MAX2(a, b) ((a) > (b) ? (a) : (b))

#ifndef EC_WORKSPACE_BYTES
#define EC_WORKSPACE_BYTES 65536
#endif
#ifndef EC_FRAME_MAX
#ifdef EC_FRAME_WIDTH
#define EC_FRAME_MAX EC_MAX2(EC_FRAME_WIDTH, EC_HOST_FRAME)
#else
#define EC_FRAME_MAX EC_MAX2(16384, EC_HOST_FRAME)
#endif
#endif
#ifndef EC_DECISION_MAX
#ifdef EC_DECISION_LEN
#define EC_DECISION_MAX EC_MAX2(EC_DECISION_LEN, EC_HOST_DECISION)
#else
#define EC_DECISION_MAX EC_MAX2(4096, EC_HOST_DECISION)
#endif
#endif
#define EC_WORKSPACE_MAX EC_MAX2(EC_WORKSPACE_BYTES, EC_HOST_WORKSPACE)
#ifndef EC_IMAGE_MAX
#define EC_IMAGE_MAX (1024L * 1024L)
#endif

#ifndef EC_NO_BUILTIN_IMAGE
#include "model_image.h"
#endif

/* instruction counts around the calls (EC_COUNTER_HEADER and EC_COUNTS_FILE) */
#if defined(EC_COUNTER_HEADER) && defined(EC_COUNTS_FILE)
#define EC_COUNTING 1
#define EC_COUNT_NOW(v) ((v) = ec_counter())
#else
#define EC_COUNTING 0
#define EC_COUNT_NOW(v) ((void)(v))
#endif

static uint64_t workspace[EC_MAX2((EC_WORKSPACE_MAX + 7) / 8, 1)];
static int16_t frame[EC_FRAME_MAX > 0 ? EC_FRAME_MAX : 1];
static int64_t decision[EC_DECISION_MAX > 0 ? EC_DECISION_MAX : 1];
static ec_model model;

#ifndef EC_NO_FILE_IO
static uint8_t image_raw[EC_IMAGE_MAX + 16];
#endif

/* ---- output ---------------------------------------------------------------- */
static void put_int(FILE *out, int64_t v)
{
    char buf[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        buf[n++] = (char)('0' + (int)(u % 10u));
        u /= 10u;
    } while (u != 0u);
    if (v < 0) buf[n++] = '-';
    while (n > 0) fputc(buf[--n], out);
}

static void put_error(ec_status s)
{
    fputs("error ", stdout);
    put_int(stdout, (int64_t)s);
    fputc(' ', stdout);
    fputs(ec_status_name(s), stdout);
    fputc('\n', stdout);
}

/* ---- input: one frame per line ---------------------------------------------
 * Returns 1 with *status EC_OK (frame read, *count values), 1 with
 * EC_ERR_FRAME (a bad line, consumed), 0 at the end of the input. Blank lines
 * are skipped. */
static int read_line(FILE *in, uint32_t width, uint32_t *count, ec_status *status)
{
    for (;;) {
        int ch = fgetc(in), bad = 0, any = 0;
        uint32_t n = 0u;
        if (ch == EOF) return 0;
        while (ch != EOF && ch != '\n') {
            if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\f' || ch == '\v') {
                ch = fgetc(in);
                continue;
            }
            any = 1;
            if (ch == '-' || ch == '+' || (ch >= '0' && ch <= '9')) {
                int neg = ch == '-', digits = 0;
                int64_t v = 0;
                if (ch == '-' || ch == '+') ch = fgetc(in);
                while (ch >= '0' && ch <= '9') {
                    if (v < 1000000) v = v * 10 + (ch - '0');   /* saturates out of range */
                    digits++;
                    ch = fgetc(in);
                }
                if (neg) v = -v;
                if (digits == 0 || v < -32768 || v > 32767) bad = 1;
                else if (n < width) frame[n] = (int16_t)v;
                n++;
                if (ch != EOF && ch != '\n' && ch != ' ' && ch != '\t' && ch != '\r' &&
                    ch != '\f' && ch != '\v')
                    bad = 1;                     /* "12x" */
                continue;
            }
            bad = 1;                             /* any other character */
            ch = fgetc(in);
        }
        if (!any) {
            if (ch == EOF) return 0;
            continue;                            /* blank line */
        }
        /* skip the rest of a bad token (bad = 1 already set) */
        *count = n;
        *status = (bad || n != width) ? EC_ERR_FRAME : EC_OK;
        return 1;
    }
}

#ifndef EC_NO_FILE_IO
/* read FILE into the aligned static buffer; returns the aligned pointer or NULL */
static uint8_t *load_file(const char *path, size_t *size)
{
    uint8_t *buf = image_raw + ((16u - (unsigned)((uintptr_t)image_raw % 16u)) % 16u);
    size_t got;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "runner: cannot open %s\n", path);
        return NULL;
    }
    got = fread(buf, 1, (size_t)EC_IMAGE_MAX, f);
    if (got == (size_t)EC_IMAGE_MAX && fgetc(f) != EOF) {
        fprintf(stderr, "runner: %s is larger than EC_IMAGE_MAX (%ld bytes)\n", path,
                (long)EC_IMAGE_MAX);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *size = got;
    return buf;
}
#endif

/* image protection (issue 27): an image in writable memory (a file read
   into RAM, or a protected image compiled in as a writable array) is opened
   with ec_model_open_rw, which corrects it in place */
#if EC_WITH_PROTECT && !defined(EC_ROM_IS_FLASH)
#define EC_RUN_RW 1
#else
#define EC_RUN_RW 0
#endif
#if EC_RUN_RW && defined(EC_MODEL_IMAGE_RW)
#define EC_BUILTIN_RW ec_model_image
#else
#define EC_BUILTIN_RW NULL
#endif

static int run(const uint8_t *image, uint8_t *rw, size_t size, int check_only)
{
    ec_status s;
    uint32_t width, dlen, ws, count, i, c0 = 0u, c1 = 0u;
    int any_bad = 0;
    FILE *in;
#if EC_COUNTING
    FILE *counts;
#endif

    EC_COUNT_NOW(c0);
#if EC_RUN_RW
    if (rw != NULL)
        s = ec_model_open_rw(rw, (uint32_t)size, &model);
    else
#endif
        s = ec_model_open(image, (uint32_t)size, &model);
    EC_COUNT_NOW(c1);
    (void)rw;
    /* a file must end at total_size (read_container refuses trailing bytes);
       ec_image_open itself accepts a larger buffer (an image in a flash region) */
    if (s == EC_OK && (size_t)model.image.size != size) s = EC_ERR_HEADER;
    if (s != EC_OK) {
        put_error(s);
        return 2;
    }
    if (check_only) {
        fputs("ok\n", stdout);
        return 0;
    }
    width = ec_frame_width(&model);
    dlen = ec_decision_len(&model);
    ws = ec_workspace_bytes(&model);
    if (width > (uint32_t)EC_FRAME_MAX || dlen > (uint32_t)EC_DECISION_MAX ||
        ws > (uint32_t)EC_WORKSPACE_MAX) {
        fprintf(stderr, "runner: the model needs %lu frame entries, %lu decision integers "
                "and %lu workspace bytes; this build has %ld, %ld and %ld\n",
                (unsigned long)width, (unsigned long)dlen, (unsigned long)ws,
                (long)EC_FRAME_MAX, (long)EC_DECISION_MAX, (long)EC_WORKSPACE_MAX);
        put_error(EC_ERR_WORKSPACE);
        return 2;
    }
#ifdef EC_FRAMES_FILE
    in = fopen(EC_FRAMES_FILE, "r");
    if (in == NULL) {
        fprintf(stderr, "runner: cannot open %s\n", EC_FRAMES_FILE);
        put_error(EC_ERR_ARG);
        return 2;
    }
#else
    in = stdin;
#endif
#if EC_COUNTING
    counts = fopen(EC_COUNTS_FILE, "w");
    if (counts == NULL) {
        fprintf(stderr, "runner: cannot write %s\n", EC_COUNTS_FILE);
        put_error(EC_ERR_ARG);
        return 2;
    }
    fputs("open_instructions ", counts);
    put_int(counts, (int64_t)(uint32_t)(c1 - c0));
    fputs("\ninfer_instructions", counts);
#endif
    while (read_line(in, width, &count, &s)) {
        int32_t label = 0;
        if (s == EC_OK) {
            EC_COUNT_NOW(c0);
            s = ec_infer(&model, frame, &label, decision, workspace,
                         (uint32_t)sizeof workspace);
            EC_COUNT_NOW(c1);
#if EC_COUNTING
            fputc(' ', counts);
            put_int(counts, (int64_t)(uint32_t)(c1 - c0));
#endif
        }
        if (s != EC_OK) {
            put_error(s);
            any_bad = 1;
            continue;
        }
        put_int(stdout, label);
        for (i = 0; i < dlen; i++) {
            fputc(' ', stdout);
            put_int(stdout, decision[i]);
        }
        fputc('\n', stdout);
    }
    (void)count;
    (void)c0;
    (void)c1;
#ifdef EC_FRAMES_FILE
    fclose(in);
#endif
#if EC_COUNTING
    fputc('\n', counts);
    fclose(counts);
#endif
    fflush(stdout);
    return any_bad ? 1 : 0;
}

#if !defined(EC_NO_ARGS) && !defined(EC_NO_FILE_IO)
/* --check-list LIST: verify every image file named in LIST (one path per
   line), one verdict line each (`ok` or `error <code> <name>`): the container
   fuzz corpus in one process. */
static int check_list(const char *list)
{
    char line[4096];
    FILE *f = fopen(list, "r");
    if (f == NULL) {
        fprintf(stderr, "runner: cannot open %s\n", list);
        return 2;
    }
    while (fgets(line, (int)sizeof line, f) != NULL) {
        size_t n = strlen(line), size = 0;
        uint8_t *image;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
        if (n == 0) continue;
        image = load_file(line, &size);
        if (image == NULL) {
            put_error(EC_ERR_ARG);
            continue;
        }
        (void)run(image, EC_RUN_RW ? image : NULL, size, 1);
    }
    fclose(f);
    fflush(stdout);
    return 0;
}
#endif

#ifdef EC_NO_ARGS
int main(void)
{
#ifdef EC_NO_BUILTIN_IMAGE
    put_error(EC_ERR_ARG);
    return 2;
#else
    return run(ec_model_image, EC_BUILTIN_RW, ec_model_image_size, 0);
#endif
}
#else
static int usage(void)
{
    fputs("usage: runner [--image FILE [--check]]  (frames on stdin, one per line)\n", stderr);
    return 2;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int check_only = 0, i;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--check") == 0) {
            check_only = 1;
#ifndef EC_NO_FILE_IO
        } else if (strcmp(argv[i], "--image") == 0 && i + 1 < argc) {
            path = argv[++i];
        } else if (strcmp(argv[i], "--check-list") == 0 && i + 1 < argc) {
            return check_list(argv[++i]);
#endif
        } else {
            return usage();
        }
    }
#ifndef EC_NO_FILE_IO
    if (path != NULL) {
        size_t size = 0;
        uint8_t *image = load_file(path, &size);
        if (image == NULL) {
            put_error(EC_ERR_ARG);
            return 2;
        }
        return run(image, EC_RUN_RW ? image : NULL, size, check_only);
    }
#endif
    (void)path;
#ifdef EC_NO_BUILTIN_IMAGE
    return usage();
#else
    return run(ec_model_image, EC_BUILTIN_RW, ec_model_image_size, check_only);
#endif
}
#endif
