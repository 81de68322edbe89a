import Foundation

/// One device of a direct send: a handle that no registration needs to hold.
public struct DirectTarget: Sendable, Hashable, Codable {
    public var platform: Platform
    public var handle: String
    public var webPushKeys: WebPushKeys?

    public init(platform: Platform, handle: String, webPushKeys: WebPushKeys? = nil) {
        self.platform = platform
        self.handle = handle
        self.webPushKeys = webPushKeys
    }
}
