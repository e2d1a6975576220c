/*
 * avr/ec_simavr.c - host harness that runs the AVR runner (avr/runner.c)
 * under simavr and measures it exactly. Built with the host compiler and
 * linked against libsimavr (Debian: libsimavr-dev):
 *
 *   gcc -std=c99 -O2 -I/usr/include/simavr ec_simavr.c -lsimavr -o ec_simavr
 *   ./ec_simavr atmega328p 16000000 runner.elf [REPORT] < frames.txt
 *   ./ec_simavr --probe atmega328p 16000000 probe.elf REPORT
 *   ./ec_simavr --uart LINES atmega328p 16000000 sketch.elf < input.txt
 *
 * It loads the ELF into a simulated MCU, feeds it the frames of stdin (one
 * per line of whitespace-separated integers, as the host runner reads them)
 * and prints what the runner returns, one line per frame: the label, then
 * the decision integers (or "error <code>" when the runtime refused the
 * frame; an image that does not open prints "error <code>" alone).
 *
 * simavr counts every instruction's cycles as the datasheet gives them, so
 * the cycle counts are exact: the harness notes the cycle counter whenever
 * the runner writes a marker to GPIOR0, right before and right after each
 * call (ec_model_open, every ec_infer), and the stack pointer after every
 * instruction, whose lowest value during a call gives that call's stack
 * (return address included). REPORT (a file) receives:
 *
 *   mcu NAME / frequency HZ / ramend ADDR
 *   open_cycles N      cycles of ec_model_open (the call and its marker)
 *   open_stack N       bytes of stack it used
 *   infer_cycles N...  cycles of each ec_infer
 *   infer_stack N...   bytes of stack each used
 *   stack_peak N       bytes of stack of the whole run (RAMEND - lowest SP)
 *
 * With --probe the program is any firmware that ends by returning from main
 * (avr-libc's exit then spins with interrupts off, where the harness stops):
 * no frames, no markers; the report gives its cycles and stack_peak (the
 * size probe of `edgecode firmware`, whose stack this measures).
 *
 * With --uart LINES the program is any firmware that talks over USART0 (an
 * Arduino sketch using Serial at 115200 baud): stdin is sent to its receiver
 * a line at a time (2,400 bytes a second), each once the firmware has
 * printed one line more than it was sent (a greeting, then one answer per
 * line), everything it transmits is copied to
 * stdout, and the run stops once it has printed LINES lines (newlines), or
 * fails after 20 simulated seconds (the `edgecode firmware --format arduino`
 * test runs the example sketch this way).
 *
 * Exit status: 0 the run ended (even with refused frames), 2 bad usage, an
 * ELF that does not load, unreadable frames or a simulation that crashed
 * or did not end.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_avr.h"
#include "sim_elf.h"
#include "sim_io.h"
#include "avr_uart.h"

/* data-space addresses of the registers avr/runner.c uses (the same on the
   ATmega328P and the ATmega2560: GPIOR0 = I/O 0x1E, GPIOR1/2 = I/O 0x2A/0x2B) */
#define SIM_MARK 0x3E
#define SIM_OUT 0x4A
#define SIM_IN 0x4B
enum { MARK_OPEN = 1, MARK_OPENED = 2, MARK_INFER = 3, MARK_INFERRED = 4, MARK_DONE = 5 };

typedef struct {
    uint8_t *bytes;
    size_t len, cap, pos;
} buffer;

static void push(buffer *b, uint8_t v)
{
    if (b->len == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 4096;
        b->bytes = realloc(b->bytes, b->cap);
        if (b->bytes == NULL) {
            fputs("ec_simavr: out of memory\n", stderr);
            exit(2);
        }
    }
    b->bytes[b->len++] = v;
}

typedef struct {
    buffer in, out;
    uint16_t sp_low, sp_mark;     /* lowest SP since the last marker, SP at it */
    uint16_t sp_min;              /* lowest SP of the run */
    avr_cycle_count_t at;         /* cycle of the last opening marker */
    uint64_t open_cycles, open_stack;
    uint64_t *infer_cycles, *infer_stack;
    size_t n_infer, cap_infer;
    int done;
    int probe;                    /* --probe: stop at the exit loop, no markers */
    long uart_lines;              /* --uart: lines to wait for (0: not a UART run) */
    long lines_seen;
    avr_irq_t *uart_in;
} harness;

/* --uart: the firmware transmitted a byte */
static void on_uart_out(struct avr_irq_t *irq, uint32_t value, void *param)
{
    harness *h = param;
    (void)irq;
    putchar((int)(value & 0xFFu));
    if ((value & 0xFFu) == '\n') {
        h->lines_seen++;
        if (h->lines_seen >= h->uart_lines) h->done = 1;
    }
}

static void read_all(buffer *in)
{
    int c;
    while ((c = getchar()) != EOF) push(in, (uint8_t)c);
}

static uint16_t sp_of(avr_t *avr)
{
    return (uint16_t)(avr->data[R_SPL] | (avr->data[R_SPH] << 8));
}

static void on_mark(struct avr_t *avr, avr_io_addr_t addr, uint8_t v, void *param)
{
    harness *h = param;
    uint16_t sp = sp_of(avr);
    (void)addr;
    if (v == MARK_OPEN || v == MARK_INFER) {
        h->at = avr->cycle;
        h->sp_mark = sp;
        h->sp_low = sp;
    } else if (v == MARK_OPENED) {
        h->open_cycles = avr->cycle - h->at;
        h->open_stack = (uint64_t)(h->sp_mark - h->sp_low);
    } else if (v == MARK_INFERRED) {
        if (h->n_infer == h->cap_infer) {
            h->cap_infer = h->cap_infer ? 2 * h->cap_infer : 256;
            h->infer_cycles = realloc(h->infer_cycles, h->cap_infer * sizeof(uint64_t));
            h->infer_stack = realloc(h->infer_stack, h->cap_infer * sizeof(uint64_t));
            if (h->infer_cycles == NULL || h->infer_stack == NULL) {
                fputs("ec_simavr: out of memory\n", stderr);
                exit(2);
            }
        }
        h->infer_cycles[h->n_infer] = avr->cycle - h->at;
        h->infer_stack[h->n_infer] = (uint64_t)(h->sp_mark - h->sp_low);
        h->n_infer++;
    } else if (v == MARK_DONE) {
        h->done = 1;
    }
}

static void on_out(struct avr_t *avr, avr_io_addr_t addr, uint8_t v, void *param)
{
    (void)avr;
    (void)addr;
    push(&((harness *)param)->out, v);
}

static uint8_t on_in(struct avr_t *avr, avr_io_addr_t addr, void *param)
{
    harness *h = param;
    (void)avr;
    (void)addr;
    return h->in.pos < h->in.len ? h->in.bytes[h->in.pos++] : 0u;
}

/* stdin: one frame per line -> 1, int16 LE values; then 0. Returns frames. */
static size_t read_frames(buffer *in)
{
    char line[1 << 16];
    size_t frames = 0;
    while (fgets(line, sizeof line, stdin) != NULL) {
        char *p = line, *end;
        int any = 0;
        if (strlen(line) == sizeof line - 1 && line[sizeof line - 2] != '\n') {
            fputs("ec_simavr: a frame line longer than 65535 characters\n", stderr);
            exit(2);
        }
        for (;;) {
            long v = strtol(p, &end, 10);
            if (end == p) break;
            if (v < -32768 || v > 32767) {
                fprintf(stderr, "ec_simavr: frame value %ld outside int16\n", v);
                exit(2);
            }
            if (!any) push(in, 1u);
            any = 1;
            push(in, (uint8_t)((uint16_t)v & 0xFFu));
            push(in, (uint8_t)((uint16_t)v >> 8));
            p = end;
        }
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
        if (*p != '\0') {
            fprintf(stderr, "ec_simavr: not a frame line: %s", line);
            exit(2);
        }
        frames += any;
    }
    push(in, 0u);
    return frames;
}

static uint64_t take(const buffer *b, size_t *at, int n)
{
    uint64_t v = 0;
    int k;
    for (k = 0; k < n; k++) v |= (uint64_t)b->bytes[*at + (size_t)k] << (8 * k);
    *at += (size_t)n;
    return v;
}

static int print_results(const buffer *out, size_t frames)
{
    size_t at = 0, f;
    uint32_t dlen;
    if (out->len < 1) return 0;
    if ((int8_t)out->bytes[0] != 0) {
        printf("error %d\n", (int)(int8_t)out->bytes[0]);
        return 1;
    }
    at = 1;
    if (out->len < 13) return 0;
    (void)take(out, &at, 4);                       /* frame width */
    dlen = (uint32_t)take(out, &at, 4);
    (void)take(out, &at, 4);                       /* workspace */
    for (f = 0; f < frames; f++) {
        int8_t code;
        uint32_t i;
        if (at >= out->len) return 0;
        code = (int8_t)out->bytes[at++];
        if (code != 0) {
            printf("error %d\n", (int)code);
            continue;
        }
        if (out->len - at < 4u + 8u * (size_t)dlen) return 0;
        printf("%ld", (long)(int32_t)(uint32_t)take(out, &at, 4));
        for (i = 0; i < dlen; i++) printf(" %lld", (long long)(int64_t)take(out, &at, 8));
        putchar('\n');
    }
    return 1;
}

/* simavr's messages: errors to stderr, the rest (ELF loading notes) dropped,
   so that stdout holds the results only */
static void quiet_logger(struct avr_t *avr, const int level, const char *format, va_list ap)
{
    (void)avr;
    if (level <= LOG_ERROR) vfprintf(stderr, format, ap);
}

static void list(FILE *f, const char *key, const uint64_t *v, size_t n)
{
    size_t i;
    fputs(key, f);
    for (i = 0; i < n; i++) fprintf(f, " %llu", (unsigned long long)v[i]);
    fputc('\n', f);
}

int main(int argc, char **argv)
{
    elf_firmware_t fw;
    avr_t *avr;
    harness h;
    size_t frames = 0;
    int state;
    unsigned long freq;
    avr_flashaddr_t last_pc = 0xFFFFFFFFu;
    avr_cycle_count_t next_byte = 0;
    long lines_sent = 0;

    avr_global_logger_set(quiet_logger);
    memset(&h, 0, sizeof h);
    memset(&fw, 0, sizeof fw);
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) {
        h.probe = 1;
        argv++;
        argc--;
    } else if (argc > 2 && strcmp(argv[1], "--uart") == 0) {
        h.uart_lines = strtol(argv[2], NULL, 10);
        if (h.uart_lines < 1) {
            fputs("ec_simavr: --uart needs a number of lines >= 1\n", stderr);
            return 2;
        }
        argv += 2;
        argc -= 2;
    }
    if (argc < 4 || argc > 5 || (h.probe && argc != 5)) {
        fputs("usage: ec_simavr MCU FREQ_HZ FIRMWARE.elf [REPORT] < frames.txt\n"
              "       ec_simavr --probe MCU FREQ_HZ FIRMWARE.elf REPORT\n", stderr);
        return 2;
    }
    freq = strtoul(argv[2], NULL, 10);
    if (h.uart_lines) read_all(&h.in);
    else if (!h.probe) frames = read_frames(&h.in);
    if (elf_read_firmware(argv[3], &fw) != 0) {
        fprintf(stderr, "ec_simavr: cannot load %s\n", argv[3]);
        return 2;
    }
    avr = avr_make_mcu_by_name(argv[1]);
    if (avr == NULL) {
        fprintf(stderr, "ec_simavr: simavr has no MCU %s\n", argv[1]);
        return 2;
    }
    avr_init(avr);
    avr->log = LOG_ERROR;
    avr->frequency = (uint32_t)freq;
    avr_load_firmware(avr, &fw);
    avr->frequency = (uint32_t)freq;
    avr_register_io_write(avr, SIM_MARK, on_mark, &h);
    avr_register_io_write(avr, SIM_OUT, on_out, &h);
    avr_register_io_read(avr, SIM_IN, on_in, &h);
    if (h.uart_lines) {
        uint32_t flags = 0;
        avr_ioctl(avr, AVR_IOCTL_UART_GET_FLAGS('0'), &flags);
        flags &= ~(uint32_t)AVR_UART_FLAG_STDIO;
        avr_ioctl(avr, AVR_IOCTL_UART_SET_FLAGS('0'), &flags);
        h.uart_in = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_INPUT);
        avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUTPUT),
                                on_uart_out, &h);
    }
    h.sp_min = h.sp_low = sp_of(avr);
    do {
        uint16_t sp;
        state = avr_run(avr);
        sp = sp_of(avr);
        if (sp < h.sp_low) h.sp_low = sp;
        if (sp < h.sp_min && sp != 0) h.sp_min = sp;
        if (h.uart_lines) {
            /* a line of stdin at a time, 2,400 bytes a second, each line once
               the firmware has printed one more line than it was sent (its
               greeting, then one answer per line), and only once its
               receiver is on (RXEN0 of UCSR0B, data address 0xC1 on the
               ATmega328P and 2560): simavr's 64-byte receive FIFO is not
               overrun while the firmware is busy */
            if (h.in.pos < h.in.len && avr->cycle >= next_byte &&
                h.lines_seen > lines_sent && (avr->data[0xC1] & (1u << 4))) {
                uint8_t byte = h.in.bytes[h.in.pos++];
                avr_raise_irq(h.uart_in, byte);
                if (byte == '\n') lines_sent++;
                next_byte = avr->cycle + (avr_cycle_count_t)(freq / 2400u) + 1u;
            }
            if (h.done) break;
            if (avr->cycle > (avr_cycle_count_t)freq * 20u) break;
        }
        if (h.probe) {           /* exit(): a jump to itself with interrupts off */
            if (avr->pc == last_pc && !avr->sreg[S_I]) {
                h.done = 1;
                break;
            }
            last_pc = avr->pc;
        }
    } while (state != cpu_Done && state != cpu_Crashed);
    if (state == cpu_Crashed || !h.done) {
        fprintf(stderr, "ec_simavr: the simulation %s at pc 0x%05x, cycle %llu\n",
                state == cpu_Crashed ? "crashed" : "stopped early", (unsigned)avr->pc,
                (unsigned long long)avr->cycle);
        return 2;
    }
    if (h.uart_lines) {
        fflush(stdout);
        return 0;
    }
    if (!h.probe && !print_results(&h.out, frames)) {
        fprintf(stderr, "ec_simavr: the runner returned %zu bytes, too few for %zu frames "
                "(buffers too small for the model?)\n", h.out.len, frames);
        return 2;
    }
    if (argc == 5) {
        FILE *r = fopen(argv[4], "w");
        if (r == NULL) {
            fprintf(stderr, "ec_simavr: cannot write %s\n", argv[4]);
            return 2;
        }
        fprintf(r, "mcu %s\nfrequency %lu\nramend %u\ncycles %llu\n", argv[1], freq,
                (unsigned)avr->ramend, (unsigned long long)avr->cycle);
        fprintf(r, "open_cycles %llu\nopen_stack %llu\n", (unsigned long long)h.open_cycles,
                (unsigned long long)h.open_stack);
        list(r, "infer_cycles", h.infer_cycles, h.n_infer);
        list(r, "infer_stack", h.infer_stack, h.n_infer);
        fprintf(r, "stack_peak %u\n", (unsigned)(avr->ramend - h.sp_min));
        fclose(r);
    }
    fflush(stdout);
    return 0;
}
