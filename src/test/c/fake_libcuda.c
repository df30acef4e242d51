/*
 * A stand-in for the CUDA driver (libcuda.so.1) for tests on machines without a GPU: the calls os2g's
 * CudaDriver makes, with the driver's signatures and result codes, keeping count of what is registered.
 * It reads every page it is asked to register, as the real driver pins them, so a bad mapping crashes
 * here rather than passing. Compiled by the tests: gcc -shared -fPIC -o libcuda.so.1 fake_libcuda.c
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MAX_REGISTERED 1024

static int devices = 1;
static int init_error = 0;
static void *registered[MAX_REGISTERED];
static size_t registered_size[MAX_REGISTERED];
static unsigned int last_flags;
static int context_current;

/* test controls */
void fake_set_devices(int n) { devices = n; }
void fake_set_init_error(int e) { init_error = e; }
long fake_registered_bytes(void) {
    long total = 0;
    for (int i = 0; i < MAX_REGISTERED; i++) total += registered[i] ? (long) registered_size[i] : 0;
    return total;
}
int fake_registered_count(void) {
    int n = 0;
    for (int i = 0; i < MAX_REGISTERED; i++) n += registered[i] != NULL;
    return n;
}
unsigned int fake_last_flags(void) { return last_flags; }

int cuInit(unsigned int flags) { return flags != 0 ? 1 : init_error; }
int cuDeviceGetCount(int *count) { *count = init_error ? 0 : devices; return init_error ? 3 : 0; }
int cuDeviceGet(int *device, int ordinal) {
    if (ordinal < 0 || ordinal >= devices) return 101; /* CUDA_ERROR_INVALID_DEVICE */
    *device = ordinal;
    return 0;
}
int cuDeviceGetName(char *name, int len, int device) {
    if (device < 0 || device >= devices) return 101;
    strncpy(name, "os2g fake GPU", (size_t) len);
    name[len - 1] = 0;
    return 0;
}
static int primary_context = 42;
int cuDevicePrimaryCtxRetain(void **ctx, int device) {
    if (device < 0 || device >= devices) return 101;
    *ctx = &primary_context;
    return 0;
}
int cuCtxSetCurrent(void *ctx) {
    context_current = ctx == &primary_context;
    return ctx == &primary_context ? 0 : 201; /* CUDA_ERROR_INVALID_CONTEXT */
}
int cuMemHostRegister_v2(void *p, size_t size, unsigned int flags) {
    if (!context_current) return 201;
    if (p == NULL || size == 0) return 1; /* CUDA_ERROR_INVALID_VALUE */
    volatile unsigned char sum = 0;
    for (size_t off = 0; off < size; off += 4096) sum += ((volatile unsigned char *) p)[off];
    int free_slot = -1;
    for (int i = 0; i < MAX_REGISTERED; i++) {
        if (registered[i] == p) return 712; /* CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED */
        if (!registered[i] && free_slot < 0) free_slot = i;
    }
    if (free_slot < 0) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    registered[free_slot] = p;
    registered_size[free_slot] = size;
    last_flags = flags;
    return 0;
}
int cuMemHostUnregister(void *p) {
    for (int i = 0; i < MAX_REGISTERED; i++) {
        if (registered[i] == p) { registered[i] = NULL; return 0; }
    }
    return 713; /* CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED */
}
int cuGetErrorName(int error, const char **name) {
    switch (error) {
        case 0: *name = "CUDA_SUCCESS"; return 0;
        case 1: *name = "CUDA_ERROR_INVALID_VALUE"; return 0;
        case 100: *name = "CUDA_ERROR_NO_DEVICE"; return 0;
        case 101: *name = "CUDA_ERROR_INVALID_DEVICE"; return 0;
        case 201: *name = "CUDA_ERROR_INVALID_CONTEXT"; return 0;
        case 712: *name = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"; return 0;
        case 713: *name = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"; return 0;
        default: return 1;
    }
}
