#pragma once
/// The NCCL unique id as text, the form in which it travels through the rendezvous store.

#include <nccl.h>

#include <string>

namespace est::distribute {

/// The id's NCCL_UNIQUE_ID_BYTES bytes as lowercase hexadecimal.
std::string EncodeNcclUniqueId(const ncclUniqueId& id);

/// The id that `text` encodes. Throws CommunicationError naming `key` (the store key it was
/// read from) when `text` is not 2 * NCCL_UNIQUE_ID_BYTES hexadecimal digits.
ncclUniqueId DecodeNcclUniqueId(const std::string& text, const std::string& key);

}  // namespace est::distribute
