import Foundation
import HeraldServer
import Logging
import Synchronization
import Testing

/// `HERALD_LOG_FORMAT=json`: one JSON object per line, the metadata as fields.
@Suite struct LineLogHandlerJSONTests {
    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    @Test func eachEntryIsOneJSONObjectWithItsMetadataAsFields() throws {
        let lines = Lines()
        var logger = Logger(label: "herald") { label in LineLogHandler(label: label, format: .json) { lines.append($0) } }
        logger.logLevel = .debug
        logger[metadataKey: "herald.appHubEngine"] = "app"
        logger.info(
            "Opened \"hub\"\nsecond line",
            metadata: ["herald.count": "3", "message": "a clash", "list": ["a", "b"], "nested": ["k": "v"]]
        )
        logger.trace("below the level")

        #expect(lines.all.count == 1)
        let line = try #require(lines.all.first)
        #expect(line.hasSuffix("}\n"))
        #expect(line.dropLast().contains("\n") == false, "one line per entry")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["level"] as? String == "info")
        #expect(object["logger"] as? String == "herald")
        #expect(object["message"] as? String == "Opened \"hub\"\nsecond line")
        #expect(object["herald.appHubEngine"] as? String == "app")
        #expect(object["herald.count"] as? String == "3")
        #expect(object["metadata.message"] as? String == "a clash", "a metadata name that is taken moves aside")
        #expect(object["list"] as? [String] == ["a", "b"])
        #expect(object["nested"] as? [String: String] == ["k": "v"])
        let timestamp = try #require(object["timestamp"] as? String)
        #expect(timestamp.hasSuffix("Z"))
        #expect(try Date(timestamp, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)).timeIntervalSinceNow.magnitude < 60)
    }
}
