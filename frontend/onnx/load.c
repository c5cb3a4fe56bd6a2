/* Reading a serialized protobuf message (a ModelProto or a TensorProto) from a file or memory.
 *
 * The file is mapped rather than read through stdio so that a model of several GiB costs one
 * mapping, and protobuf-c unpacks straight from it (it copies what it keeps, so the mapping
 * is dropped right after). protobuf-c reports malformed input by returning NULL; the
 * importer then checks the message's own consistency. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx/onnx_internal.h"

void *ox_unpack_file(const char *path, const ProtobufCMessageDescriptor *desc, int *rc) {
  *rc = WF_EXIT_IO;
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    wf_error_at(path, "cannot open: %s", strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    wf_error_at(path, "cannot read: %s", errno ? strerror(errno) : "not a regular file");
    close(fd);
    return NULL;
  }
  size_t size = (size_t)st.st_size;
  const uint8_t *data = (const uint8_t *)"";
  void *map = NULL;
  if (size > 0) {
    map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      wf_error_at(path, "cannot map %zu bytes: %s", size, strerror(errno));
      close(fd);
      return NULL;
    }
    data = map;
  }
  close(fd);
  void *msg = ox_unpack_buffer(path, data, size, desc, rc);
  if (map) munmap(map, size);
  return msg;
}

void *ox_unpack_buffer(const char *path, const uint8_t *data, size_t size, const ProtobufCMessageDescriptor *desc,
                       int *rc) {
  ProtobufCMessage *msg = protobuf_c_message_unpack(desc, NULL, size, data);
  *rc = WF_EXIT_INPUT;
  if (!msg) {
    wf_error_at(path, "not a valid %s: the protobuf data is truncated or corrupt (%zu bytes)",
                desc == &onnx__model_proto__descriptor ? "ONNX model" : "ONNX tensor", size);
    return NULL;
  }
  *rc = WF_EXIT_OK;
  return msg;
}
