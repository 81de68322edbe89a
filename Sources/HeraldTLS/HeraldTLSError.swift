public import HeraldCore

/// An error from loading or creating certificates and keys.
///
/// Descriptions name files and hosts, never key material. Equality compares the code only
/// (``CodedError``).
public struct HeraldTLSError: CodedError {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case fileSystem, invalidPEM, invalidPKCS12, keyMismatch, invalidHost
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A file or directory could not be read, written or created.
        public static let fileSystem = Code(.fileSystem)
        /// A PEM file holds no usable certificate or key.
        public static let invalidPEM = Code(.invalidPEM)
        /// Bytes that are not a PKCS#12 (`.p12`) archive, or a wrong password for it.
        public static let invalidPKCS12 = Code(.invalidPKCS12)
        /// A certificate and a key on disk do not belong together, or only one of them exists.
        public static let keyMismatch = Code(.keyMismatch)
        /// A host name or IP address that cannot go into a certificate.
        public static let invalidHost = Code(.invalidHost)

        /// A short name, safe as a metric label.
        public var description: String { base.rawValue }
    }

    public let code: Code
    /// What went wrong, naming files or hosts but never key material.
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

}
