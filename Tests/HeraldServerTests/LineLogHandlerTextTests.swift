import Foundation
import HeraldServer
import Logging
import Synchronization
import Testing

/// The default log format: the lines of swift-log's stream handler, written out lazily.
@Suite struct LineLogHandlerTextTests {
    final class Lines: TextOutputStream, Sendable {
        private let lines = Mutex<[String]>([])
        func write(_ string: String) { lines.withLock { $0.append(string) } }
        var all: [String] { lines.withLock { $0 } }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String { "it broke" }
    }

    /// The same entries through both handlers give the same lines (the timestamps aside, when
    /// the second turns between the two).
    @Test func writesWhatTheStreamHandlerWrites() throws {
        let ours = Lines(), theirs = Lines()
        var text = Logger(label: "herald.test") { label in LineLogHandler(label: label, format: .text) { ours.write($0) } }
        var stream = Logger(label: "herald.test") { label in StreamLogHandler(label: label, stream: theirs, metadataProvider: nil) }
        for index in 0..<2 {
            let logger = index == 0 ? text : stream
            logger.info("Plain")
            logger.trace("below the level")
            logger.warning("With metadata", metadata: ["b": "2", "a": ["x", "y"], "nested": ["k": "v"]])
            logger.error("Failed", error: Failure())
        }
        text[metadataKey: "herald.request.id"] = "r1"
        text[metadataKey: "herald.user"] = "alice"
        stream[metadataKey: "herald.request.id"] = "r1"
        stream[metadataKey: "herald.user"] = "alice"
        text.notice("Set before", metadata: ["herald.user": "bob"])
        stream.notice("Set before", metadata: ["herald.user": "bob"])

        #expect(ours.all.count == 4)
        let withoutTime = { (line: String) in line.split(separator: " ", maxSplits: 1).last.map(String.init) ?? line }
        #expect(ours.all.map(withoutTime) == theirs.all.map(withoutTime))
        #expect(ours.all.last?.hasSuffix(" notice herald.test: herald.request.id=r1 herald.user=bob [HeraldServerTests] Set before\n") == true)
        let stamp = try #require(ours.all.first?.split(separator: " ").first)
        #expect(stamp.count == "2026-11-28T23:42:37+0000".count)
    }
}
