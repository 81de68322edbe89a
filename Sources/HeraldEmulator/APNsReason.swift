/// An APNs error reason, as the emulator reports it: an open set of values.
struct APNsReason: Hashable, Sendable, RawRepresentable {
    var rawValue: String
    init(rawValue: String) { self.rawValue = rawValue }

    static let badDeviceToken = Self(rawValue: "BadDeviceToken")
    static let badTopic = Self(rawValue: "BadTopic")
    static let deviceTokenNotForTopic = Self(rawValue: "DeviceTokenNotForTopic")
    static let missingTopic = Self(rawValue: "MissingTopic")
    static let topicDisallowed = Self(rawValue: "TopicDisallowed")
    static let payloadEmpty = Self(rawValue: "PayloadEmpty")
    static let badPayload = Self(rawValue: "BadPayload")
    static let badPriority = Self(rawValue: "BadPriority")
    static let badExpirationDate = Self(rawValue: "BadExpirationDate")
    static let badCollapseId = Self(rawValue: "BadCollapseId")
    static let badMessageId = Self(rawValue: "BadMessageId")
    static let missingDeviceToken = Self(rawValue: "MissingDeviceToken")
    static let invalidPushType = Self(rawValue: "InvalidPushType")
    static let expiredProviderToken = Self(rawValue: "ExpiredProviderToken")
    static let invalidProviderToken = Self(rawValue: "InvalidProviderToken")
    static let missingProviderToken = Self(rawValue: "MissingProviderToken")
    static let badPath = Self(rawValue: "BadPath")
    static let methodNotAllowed = Self(rawValue: "MethodNotAllowed")
    static let unregistered = Self(rawValue: "Unregistered")
    static let payloadTooLarge = Self(rawValue: "PayloadTooLarge")
    static let tooManyProviderTokenUpdates = Self(rawValue: "TooManyProviderTokenUpdates")
    static let tooManyRequests = Self(rawValue: "TooManyRequests")
    static let missingChannelId = Self(rawValue: "MissingChannelId")
    static let badChannelId = Self(rawValue: "BadChannelId")
    static let channelNotRegistered = Self(rawValue: "ChannelNotRegistered")
    static let missingPushType = Self(rawValue: "MissingPushType")
    static let badRequestParams = Self(rawValue: "BadRequestParams")
    static let badRequestPayload = Self(rawValue: "BadRequestPayload")
    static let cannotCreateChannelConfig = Self(rawValue: "CannotCreateChannelConfig")
    static let topicMismatch = Self(rawValue: "TopicMismatch")
    static let internalServerError = Self(rawValue: "InternalServerError")
    static let serviceUnavailable = Self(rawValue: "ServiceUnavailable")

    /// Every reason above: their error bodies are encoded once, up front.
    static let known: [APNsReason] = [
        .badDeviceToken, .badTopic, .deviceTokenNotForTopic, .missingTopic, .topicDisallowed, .payloadEmpty,
        .badPayload, .badPriority, .badExpirationDate, .badCollapseId, .badMessageId, .missingDeviceToken,
        .invalidPushType, .expiredProviderToken, .invalidProviderToken, .missingProviderToken, .badPath,
        .methodNotAllowed, .unregistered, .payloadTooLarge, .tooManyProviderTokenUpdates, .tooManyRequests,
        .internalServerError, .serviceUnavailable, .missingChannelId, .badChannelId, .channelNotRegistered,
        .missingPushType, .badRequestParams, .badRequestPayload, .cannotCreateChannelConfig, .topicMismatch,
    ]
}
