#include "core/key_entry.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace tokenlease::internal {

KeyEntry* KeyEntry::Create(std::string_view name, int band_count,
                           int log_count) {
  const size_t size = std::max<size_t>(
      CellsOffset() + band_count * sizeof(AtomicCell) + name.size(), 80);
  void* mem = ::operator new (size, std::align_val_t{alignof(AtomicCell)});
  KeyEntry* e = new (mem) KeyEntry();
  e->band_count = static_cast<uint16_t>(band_count);
  e->name_size = static_cast<uint32_t>(name.size());
  for (int i = 0; i < band_count; ++i) new (&e->cells()[i]) AtomicCell();
  std::memcpy(const_cast<char*>(e->name_data()), name.data(), name.size());
  if (log_count > 0) e->logs = std::make_unique<SlidingLog[]>(log_count);
  return e;
}

void KeyEntry::Destroy(KeyEntry* e) {
  e->~KeyEntry();
  ::operator delete (e, std::align_val_t{alignof(AtomicCell)});
}

}  // namespace tokenlease::internal
