#ifndef STORELENS_CCRYPTO_SHIM_H
#define STORELENS_CCRYPTO_SHIM_H
// OpenSSL's libcrypto (Debian libssl-dev, Homebrew openssl@3): PBKDF2, AES key wrap and
// AES-256-CBC for encrypted iOS backups. Only the EVP interface is used.
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/err.h>

// EVP_CIPHER_CTX_FLAG_WRAP_ALLOW is a macro; Swift needs a value it can see.
static inline void storelens_allow_wrap(EVP_CIPHER_CTX *ctx) {
    EVP_CIPHER_CTX_set_flags(ctx, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
}
// libcrypto tears itself down in an atexit handler; a thread still hashing or decrypting while the
// process exits (a background evidence hash, say) then takes a destroyed lock and crashes. Asking
// for no atexit cleanup keeps libcrypto usable until the process is gone. Idempotent and cheap.
static inline void storelens_crypto_init(void) {
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}
#endif
