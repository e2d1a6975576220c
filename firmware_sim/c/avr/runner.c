/*
 * avr/runner.c - the test runner of the edgecode C runtime on AVR, under the
 * simavr harness (avr/ec_simavr.c). Not part of the runtime.
 *
 * An AVR has no console or files: the runner talks to the harness through
 * three general-purpose I/O registers, which the harness watches:
 *
 *   GPIOR0  write: a marker (EC_SIM_*): the harness notes the cycle count
 *           and the stack pointer, so the cycles and the stack of
 *           ec_model_open and of each ec_infer are exact;
 *   GPIOR1  write: one byte of output;
 *   GPIOR2  read:  one byte of input.
 *
 * Protocol (little-endian): after the open the runner writes the status
 * (1 byte) and, when it is EC_OK, the frame width, the decision length and
 * the workspace bytes (4 bytes each). Then, for every input byte 1, it reads
 * one frame (frame-width int16 values), runs it and writes the status and,
 * when EC_OK, the label (int32) and the decision integers (int64 each). An
 * input byte 0 ends the run: the runner sleeps with interrupts off, which
 * stops simavr.
 *
 * The frame, decision and workspace buffers have the sizes model_config.h
 * gives for the compiled-in model (`edgecode firmware` passes it with
 * -include); the image is model_image.S's, read in place from flash (a
 * protected image: in RAM, EC_MODEL_IMAGE_RW, opened by ec_model_open_rw).
 */
#include <avr/interrupt.h>
#include <avr/io.h>
#include <avr/sleep.h>

#include "edgecode_rt.h"
#include "model_image.h"

enum { EC_SIM_OPEN = 1, EC_SIM_OPENED = 2, EC_SIM_INFER = 3, EC_SIM_INFERRED = 4,
       EC_SIM_DONE = 5 };

static uint64_t workspace[(EC_WORKSPACE_BYTES + 7) / 8];
static int16_t frame[EC_FRAME_WIDTH];
static int64_t decision[EC_DECISION_LEN];
static ec_model model;

/* the marker write is one OUT instruction between the calls it brackets */
#define EC_MARK(m) (GPIOR0 = (uint8_t)(m))

static void put_bytes(const void *p, uint8_t n)
{
    const uint8_t *b = (const uint8_t *)p;
    while (n--) GPIOR1 = *b++;
}

static uint8_t get_byte(void)
{
    return GPIOR2;
}

int main(void)
{
    ec_status s;
    uint32_t width, dlen, ws, i;
    int8_t code;

    EC_MARK(EC_SIM_OPEN);
#ifdef EC_MODEL_IMAGE_RW
    /* a protected image (issue 27): in RAM, corrected in place by the open */
    s = ec_model_open_rw(ec_model_image, ec_model_image_size, &model);
#else
    s = ec_model_open(ec_model_image, ec_model_image_size, &model);
#endif
    EC_MARK(EC_SIM_OPENED);
    if (s == EC_OK) {
        width = ec_frame_width(&model);
        dlen = ec_decision_len(&model);
        ws = ec_workspace_bytes(&model);
        if (width > EC_FRAME_WIDTH || dlen > EC_DECISION_LEN || ws > sizeof workspace)
            s = EC_ERR_WORKSPACE;      /* buffers for another model */
    }
    code = (int8_t)s;
    put_bytes(&code, 1);
    if (s == EC_OK) {
        put_bytes(&width, 4);
        put_bytes(&dlen, 4);
        put_bytes(&ws, 4);
        while (get_byte() == 1u) {
            int32_t label = 0;
            for (i = 0; i < width; i++) {
                uint8_t lo = get_byte();
                frame[i] = (int16_t)(uint16_t)(lo | ((uint16_t)get_byte() << 8));
            }
            EC_MARK(EC_SIM_INFER);
            s = ec_infer(&model, frame, &label, decision, workspace, (uint32_t)sizeof workspace);
            EC_MARK(EC_SIM_INFERRED);
            code = (int8_t)s;
            put_bytes(&code, 1);
            if (s == EC_OK) {
                put_bytes(&label, 4);
                for (i = 0; i < dlen; i++) put_bytes(&decision[i], 8);
            }
        }
    }
    EC_MARK(EC_SIM_DONE);
    cli();
    sleep_enable();
    sleep_cpu();           /* interrupts off: simavr ends the simulation */
    for (;;) {}
}
