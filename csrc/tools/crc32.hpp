// CRC-32 as zip, zlib and PNG compute it (polynomial 0x04C11DB7, bits reflected, the register
// inverted before and after), for the members of the zip files the report writes
// (pypto/report/records_file.py). zlib's crc32 runs at ~1.7 GB/s on this project's hosts,
// more than a quarter of writing records.npz; this folds the data by carry-less multiplication
// (PCLMULQDQ, 64 bytes at a time, or VPCLMULQDQ on AVX-512, 256), >10 GB/s, with a
// table-driven fallback on CPUs without either.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pypto::tools {

// The CRC-32 of `n` bytes at `data` continuing from `crc`, the CRC of the bytes before them (0
// for none): crc32(crc32(0, a, n), b, m) is the CRC of a's n bytes followed by b's m bytes, as
// with zlib's crc32.
uint32_t crc32(uint32_t crc, const void* data, size_t n);

// The same by the table alone (the fallback), for tests of the folding against it.
uint32_t crc32_table(uint32_t crc, const void* data, size_t n);

}  // namespace pypto::tools
