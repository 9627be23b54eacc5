"""Pure object formats: bytes in, dataclasses out, and back. No I/O."""
