"""The plugin's per-chunk transforms and its data key. Pure.

Each chunk is transformed on its own, with no framing between chunks:
zstd (level 3, content size in the frame header, no checksum) when the
manifest says ``compression``, then AES-256-GCM when it holds
``encryption``: ``IV(12) || ciphertext || tag(16)`` with the manifest's
``aad`` as associated data. The 32-byte data key is wrapped with RSA-OAEP
where both the OAEP digest and MGF1 use SHA3-512 (BouncyCastle's
``RSA/NONE/OAEPWithSHA3-512AndMGF1Padding``), empty label.
"""

from __future__ import annotations

from dataclasses import dataclass

import zstandard
from Cryptodome.Cipher import AES, PKCS1_OAEP
from Cryptodome.Hash import SHA3_512
from Cryptodome.PublicKey import RSA
from Cryptodome.Signature.pss import MGF1

from ...errors import ConfigError, FormatError

IV_SIZE = 12
TAG_SIZE = 16
DATA_KEY_SIZE = 32
AAD_SIZE = 32
"""The plugin draws its AAD as a second AES-256 key's bytes."""


@dataclass(frozen=True)
class ChunkTransform:
    """How every chunk of one segment is stored."""

    compression: bool
    data_key: bytes | None = None
    aad: bytes = b""


def _oaep(key: RSA.RsaKey) -> PKCS1_OAEP.PKCS1OAEP_Cipher:
    # pycryptodomex's stubs give SHA3_512.new a signature their own hash protocols do not accept; it works at run time.
    return PKCS1_OAEP.new(
        key,
        hashAlgo=SHA3_512,  # type: ignore[arg-type]
        mgfunc=lambda seed, size: MGF1(seed, size, SHA3_512),  # type: ignore[arg-type]
    )


def import_public_key(public_key_pem: bytes, *, key_pair_id: str) -> RSA.RsaKey:
    """The RSA public key in ``public_key_pem`` (a private key gives its
    public part). Raises :class:`ConfigError` naming the key pair when the
    PEM is not an RSA key or too small to wrap a data key with OAEP and
    SHA3-512."""
    try:
        public_key = RSA.import_key(public_key_pem).public_key()
    except (ValueError, IndexError, TypeError):
        raise ConfigError(f"public key of key pair {key_pair_id!r} is not an RSA public key PEM") from None
    if public_key.size_in_bytes() < 2 * SHA3_512.digest_size + 2 + DATA_KEY_SIZE:
        raise ConfigError(
            f"public key of key pair {key_pair_id!r} is {public_key.size_in_bits()} bits, too small for "
            "RSA-OAEP with SHA3-512 (give at least 2048 bits)"
        )
    return public_key


def wrap_data_key(data_key: bytes, public_key_pem: bytes, *, key_pair_id: str) -> bytes:
    """``data_key`` wrapped for the public key of ``key_pair_id`` (OAEP draws
    a fresh seed each time); raises as :func:`import_public_key`."""
    return _oaep(import_public_key(public_key_pem, key_pair_id=key_pair_id)).encrypt(data_key)


def unwrap_data_key(wrapped: bytes, private_key_pem: bytes, *, key_pair_id: str, key: str) -> bytes:
    """The data key of the manifest ``key``, unwrapped with the private key
    of ``key_pair_id``. Raises :class:`ConfigError` naming both when the PEM
    is not an RSA private key or not the one that wrapped it."""
    try:
        private_key = RSA.import_key(private_key_pem)
    except (ValueError, IndexError, TypeError):
        raise ConfigError(
            f"private key of key pair {key_pair_id!r} (for {key!r}) is not an RSA private key PEM"
        ) from None
    if not private_key.has_private():
        raise ConfigError(f"key of key pair {key_pair_id!r} (for {key!r}) is a public key; give its private key")
    try:
        data_key = _oaep(private_key).decrypt(wrapped)
    except ValueError:
        raise ConfigError(
            f"the data key of {key!r} does not unwrap with the private key given for key pair {key_pair_id!r}: "
            "is it that pair's key?"
        ) from None
    if len(data_key) != DATA_KEY_SIZE:
        raise FormatError(f"the data key of {key!r} is {len(data_key)} bytes, not {DATA_KEY_SIZE}")
    return data_key


def decode_chunk(stored: bytes, transform: ChunkTransform, *, original_size: int, key: str, index: int) -> bytes:
    """The original bytes of chunk ``index`` of the object ``key``, which
    must be ``original_size`` bytes. Raises :class:`FormatError` naming the
    object and chunk when it does not decrypt (tampered, or another key)
    or decompress to that size."""
    data = stored
    if transform.data_key is not None:
        data = _decrypt(data, transform.data_key, transform.aad, key=key, index=index)
    if transform.compression:
        try:
            frame_size = zstandard.frame_content_size(data)
            if frame_size != original_size:
                raise FormatError(f"chunk {index} of {key!r} states {frame_size} bytes (-1: none), not {original_size}")
            data = zstandard.ZstdDecompressor().decompress(data)
        except zstandard.ZstdError as error:
            raise FormatError(f"chunk {index} of {key!r} does not decompress ({error})") from None
    if len(data) != original_size:
        raise FormatError(f"chunk {index} of {key!r} holds {len(data)} bytes, not {original_size}")
    return data


def encode_chunk(original: bytes, transform: ChunkTransform, *, iv: bytes = b"") -> bytes:
    """``original`` stored as the plugin stores a chunk; ``iv`` (12 bytes,
    fresh per chunk) is used when ``transform`` encrypts."""
    data = original
    if transform.compression:
        data = zstandard.ZstdCompressor(level=3, write_content_size=True, write_checksum=False).compress(data)
    if transform.data_key is not None:
        cipher = AES.new(transform.data_key, AES.MODE_GCM, nonce=iv, mac_len=TAG_SIZE)
        cipher.update(transform.aad)
        ciphertext, tag = cipher.encrypt_and_digest(data)
        data = iv + ciphertext + tag
    return data


def _decrypt(stored: bytes, data_key: bytes, aad: bytes, *, key: str, index: int) -> bytes:
    if len(stored) < IV_SIZE + TAG_SIZE:
        raise FormatError(f"chunk {index} of {key!r} is {len(stored)} bytes, too short for AES-GCM")
    cipher = AES.new(data_key, AES.MODE_GCM, nonce=stored[:IV_SIZE], mac_len=TAG_SIZE)
    cipher.update(aad)
    try:
        return cipher.decrypt_and_verify(stored[IV_SIZE:-TAG_SIZE], stored[-TAG_SIZE:])
    except ValueError:
        raise FormatError(
            f"chunk {index} of {key!r} fails its AES-GCM check: tampered, or encrypted under another data key"
        ) from None
