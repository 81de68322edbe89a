import Foundation
import HeraldCore
import HummingbirdBcrypt
import Synchronization

/// bcrypt on the password-hashing pool (``PasswordHashing``), and a check of a password
/// against an account that may not exist: an unknown name is checked against a decoy hash of
/// the same cost, so the answer's time does not tell which names exist. App accounts and
/// console operators use it.
final class PasswordHasher: Sendable {
    let cost: UInt8
    let hashing: PasswordHashing
    /// A hash of a random password at `cost`, made at the first check of an unknown name.
    private let decoyHash = Mutex<String?>(nil)

    init(cost: UInt8, hashing: PasswordHashing = .unmanaged) {
        self.cost = cost
        self.hashing = hashing
    }

    func hash(_ password: String) async throws -> String {
        let cost = self.cost
        return try await hashing.perform { Bcrypt.hash(password, cost: cost) }
    }

    /// Whether `password` matches `hash`; with no hash (an unknown name), `false` after as long
    /// as a real check takes.
    func verify(_ password: String, against hash: String?) async throws -> Bool {
        let checked: String
        if let hash { checked = hash } else { checked = try await decoy() }
        let ok = try await hashing.perform { Bcrypt.verify(password, hash: checked) }
        return ok && hash != nil
    }

    private func decoy() async throws -> String {
        if let hash = decoyHash.withLock({ $0 }) { return hash }
        let hash = try await self.hash(UUID.random().uuidString)
        return decoyHash.withLock { stored in
            if let stored { return stored }
            stored = hash
            return hash
        }
    }

    /// A random token of 256 bits, URL-safe, after `prefix`.
    static func randomToken(prefix: String = "") -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return prefix + Data(bytes).base64URLEncoded()
    }
}
