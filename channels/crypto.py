"""WeCom (企业微信) callback message crypto, written against the platform's published spec and
sample vectors: `msg_signature` is SHA1 over the sorted token, timestamp, nonce and ciphertext;
the body is AES-256-CBC with the key from the 43-character EncodingAESKey (base64 of the key
without its padding) and the key's first 16 bytes as IV, PKCS#7-padded to 32-byte blocks; the
plaintext is 16 random bytes, the message length (4 bytes, network order), the message, and
the receiver id (the corp id), which must match.

Raises CryptoError for anything that does not verify: callers answer 4xx and process nothing.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import struct

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

BLOCK = 32  # WeCom pads to 32 bytes, not AES's 16


class CryptoError(ValueError):
    pass


def signature(token: str, timestamp: str, nonce: str, encrypted: str) -> str:
    return hashlib.sha1("".join(sorted([token, str(timestamp), str(nonce), encrypted])).encode()).hexdigest()


class WeComCrypto:
    def __init__(self, token: str, encoding_aes_key: str, receive_id: str):
        if len(encoding_aes_key or "") != 43:
            raise CryptoError("EncodingAESKey must be 43 characters")
        try:
            self.key = base64.b64decode(encoding_aes_key + "=")
        except (ValueError, TypeError) as exc:
            raise CryptoError("EncodingAESKey is not base64") from exc
        if len(self.key) != 32:
            raise CryptoError("EncodingAESKey does not decode to a 32-byte key")
        self.token, self.receive_id = token, receive_id

    def verify(self, msg_signature: str, timestamp: str, nonce: str, encrypted: str) -> None:
        if not hmac.compare_digest(signature(self.token, timestamp, nonce, encrypted), (msg_signature or "").lower()):
            raise CryptoError("msg_signature does not match")

    def decrypt(self, encrypted: str) -> str:
        try:
            data = base64.b64decode(encrypted, validate=True)
        except (ValueError, TypeError) as exc:
            raise CryptoError("ciphertext is not base64") from exc
        if not data or len(data) % 16:
            raise CryptoError("ciphertext length is not a whole number of blocks")
        decryptor = Cipher(algorithms.AES(self.key), modes.CBC(self.key[:16])).decryptor()
        plain = decryptor.update(data) + decryptor.finalize()
        pad = plain[-1]
        if not 1 <= pad <= BLOCK or plain[-pad:] != bytes([pad]) * pad:
            raise CryptoError("bad padding")
        plain = plain[:-pad]
        if len(plain) < 20:
            raise CryptoError("plaintext too short")
        (length,) = struct.unpack("!I", plain[16:20])
        message, receiver = plain[20:20 + length], plain[20 + length:]
        if len(message) != length:
            raise CryptoError("message length does not match")
        if receiver.decode("utf-8", "replace") != self.receive_id:
            raise CryptoError("receiver id does not match this corp")
        try:
            return message.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CryptoError("message is not UTF-8") from exc

    def encrypt(self, message: str, *, random_prefix: bytes | None = None) -> str:
        body = message.encode("utf-8")
        plain = (random_prefix or os.urandom(16)) + struct.pack("!I", len(body)) + body + self.receive_id.encode()
        pad = BLOCK - len(plain) % BLOCK
        plain += bytes([pad]) * pad
        encryptor = Cipher(algorithms.AES(self.key), modes.CBC(self.key[:16])).encryptor()
        return base64.b64encode(encryptor.update(plain) + encryptor.finalize()).decode()

    def verify_and_decrypt(self, msg_signature: str, timestamp: str, nonce: str, encrypted: str) -> str:
        self.verify(msg_signature, timestamp, nonce, encrypted)
        return self.decrypt(encrypted)
