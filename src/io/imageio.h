/*
 * imageio.h - reading and writing images (PNG) and arrays (NumPy .npy).
 *
 * Layout: a buffer's dimension 0 is the densest.  A PNG of width W and
 * height H is a buffer (W, H) for gray or (W, H, C) for C = 2 (gray+alpha),
 * 3 (RGB), 4 (RGBA) channels, u8 for 8-bit files, u16 for 16-bit.  A .npy
 * array of C-order shape (a, b, c) is a buffer of extents (c, b, a).
 */
#ifndef SC_IMAGEIO_H
#define SC_IMAGEIO_H

#include "stagecraft.h"

/* By extension (.png or .npy).  NULL on error with a message in err. */
sc_buffer *io_load(const char *path, char *err, size_t errlen);
/* PNG needs u8 or u16 with 2 dims, or 3 dims of 1..4 channels; any other
 * type is converted: f32 by clamping [0, 1] to 16 bits, other integers by
 * clamping to [0, 65535].  .npy takes every type.  0, or -1 with err. */
int io_save(const char *path, const sc_buffer *b, char *err, size_t errlen);

#endif
