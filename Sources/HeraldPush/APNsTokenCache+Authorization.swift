import Crypto
import Foundation

extension APNsTokenCache {
    /// The process's shared provider token for a key, as the `authorization` header value
    /// (`bearer <jwt>`): for tools that talk to APNs or its emulator without a provider,
    /// such as the benchmark's h2load run. Shares the token providers use, so it never
    /// causes an extra token update.
    package func authorization(teamID: String, keyID: String, privateKeyPEM: String) async throws -> String {
        let key = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        return try await entry(teamID: teamID, keyID: keyID, publicKey: key.publicKey).token(key: key, lifetime: 50 * 60).authorization
    }
}
