public import HeraldCore

/// An error from setting up or authenticating a push provider.
///
/// Messages name what is wrong (a missing field, a key that does not parse) and never
/// contain the key, a token or a payload. Equality compares the code only (``CodedError``).
public struct PushProviderError: CodedError {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidConfiguration, invalidPrivateKey, invalidServiceAccount, signingFailed
            case tokenRequestFailed
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A configuration value is out of range or malformed.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// A private key (APNs `.p8`, service-account key) could not be read.
        public static let invalidPrivateKey = Code(.invalidPrivateKey)
        /// A service-account JSON file is malformed or misses a field.
        public static let invalidServiceAccount = Code(.invalidServiceAccount)
        /// Signing a JSON Web Token failed.
        public static let signingFailed = Code(.signingFailed)
        /// An OAuth2 token endpoint refused or failed to issue an access token.
        public static let tokenRequestFailed = Code(.tokenRequestFailed)

        /// A short name, safe as a metric label.
        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public static func invalidConfiguration(_ message: String) -> PushProviderError {
        .init(code: .invalidConfiguration, message: message)
    }
    public static func invalidPrivateKey(_ message: String) -> PushProviderError {
        .init(code: .invalidPrivateKey, message: message)
    }
    public static func invalidServiceAccount(_ message: String) -> PushProviderError {
        .init(code: .invalidServiceAccount, message: message)
    }
    public static func signingFailed(_ message: String) -> PushProviderError {
        .init(code: .signingFailed, message: message)
    }
    public static func tokenRequestFailed(_ message: String) -> PushProviderError {
        .init(code: .tokenRequestFailed, message: message)
    }
}
