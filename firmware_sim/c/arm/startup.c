/*
 * Minimal Cortex-M startup for the edgecode runner under QEMU (mps2-an385 /
 * mps2-an386) with newlib's semihosting library (librdimon): vector table,
 * .data copy, .bss zeroing, semihosting handles, main, exit. Not part of the
 * runtime: a real project keeps its own startup (docs/firmware.md).
 */
#include <stdint.h>
#include <stdlib.h>

extern uint32_t __stack_top, __data_load, __data_start, __data_end, __bss_start__, __bss_end__;
extern int main(void);
extern void initialise_monitor_handles(void);

void Reset_Handler(void);
void Default_Handler(void);

void Reset_Handler(void)
{
    uint32_t *src = &__data_load, *dst = &__data_start;
    while (dst < &__data_end) *dst++ = *src++;
    for (dst = &__bss_start__; dst < &__bss_end__;) *dst++ = 0u;
    initialise_monitor_handles();
    exit(main());
}

void Default_Handler(void)
{
    exit(3);   /* a fault: leave QEMU with a non-zero status */
}

__attribute__((section(".vectors"), used))
static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)&__stack_top,   /* initial stack pointer */
    Reset_Handler,                             /* reset */
    Default_Handler, Default_Handler,          /* NMI, HardFault */
    Default_Handler, Default_Handler, Default_Handler, 0, 0, 0, 0,
    Default_Handler, Default_Handler, 0, Default_Handler, Default_Handler,
};

/* newlib's exit() runs __libc_fini_array, which calls _fini (normally from
   crti.o, left out with -nostartfiles): nothing to finalise here. */
void _init(void);
void _fini(void);
void _init(void) {}
void _fini(void) {}
