/*
 * riscv/ec_counter.h - the runner's instruction counter on RV32 (QEMU).
 *
 * ec_counter() reads minstret, the machine-mode count of retired
 * instructions (CSR 0xB02; written as a raw `.insn` so that -march=rv32imac
 * suffices without the Zicsr extension's name). Under qemu-system-riscv32
 * with `-icount shift=0` it counts the guest's executed instructions
 * exactly; on real hardware it is the core's own counter. Not part of the
 * runtime.
 */
#ifndef EC_COUNTER_H
#define EC_COUNTER_H
#include <stdint.h>

static inline uint32_t ec_counter(void)
{
    uint32_t v;
    __asm__ volatile(".insn i 0x73, 2, %0, x0, -1278" : "=r"(v));  /* csrrs v, minstret, x0 */
    return v;
}
#endif
