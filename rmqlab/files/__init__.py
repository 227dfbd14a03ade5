"""Layer 2 — files: one memory-mapped file, and a queue of files named by offset."""

from .mapped_file import MappedFile
from .mapped_file_queue import MappedFileQueue, file_name_for_offset

__all__ = ["MappedFile", "MappedFileQueue", "file_name_for_offset"]
