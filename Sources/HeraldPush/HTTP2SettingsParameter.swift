/// One parameter of a SETTINGS frame (RFC 9113, section 6.5.2).
struct HTTP2SettingsParameter: Hashable, Sendable {
    var identifier: UInt16
    var value: UInt32

    init(_ identifier: UInt16, _ value: UInt32) {
        self.identifier = identifier
        self.value = value
    }

    static let headerTableSize: UInt16 = 0x1
    static let enablePush: UInt16 = 0x2
    static let maxConcurrentStreams: UInt16 = 0x3
    static let initialWindowSize: UInt16 = 0x4
    static let maxFrameSize: UInt16 = 0x5
    static let maxHeaderListSize: UInt16 = 0x6
}
