/// The error code of an FCM HTTP v1 error: `error.details[].errorCode`, or the canonical
/// `error.status` when there is no FCM detail.
///
/// An open set: an unknown code keeps its raw string.
public struct FCMErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    // FcmError codes
    public static let unspecifiedError = FCMErrorCode("UNSPECIFIED_ERROR")
    public static let invalidArgument = FCMErrorCode("INVALID_ARGUMENT")
    public static let unregistered = FCMErrorCode("UNREGISTERED")
    public static let senderIDMismatch = FCMErrorCode("SENDER_ID_MISMATCH")
    public static let quotaExceeded = FCMErrorCode("QUOTA_EXCEEDED")
    public static let unavailable = FCMErrorCode("UNAVAILABLE")
    public static let `internal` = FCMErrorCode("INTERNAL")
    public static let thirdPartyAuthError = FCMErrorCode("THIRD_PARTY_AUTH_ERROR")
    // Canonical statuses that appear without an FCM detail
    public static let permissionDenied = FCMErrorCode("PERMISSION_DENIED")
    public static let unauthenticated = FCMErrorCode("UNAUTHENTICATED")
    public static let notFound = FCMErrorCode("NOT_FOUND")
    public static let resourceExhausted = FCMErrorCode("RESOURCE_EXHAUSTED")
}
