import Foundation
import Logging
import Synchronization
import Testing

@testable import herald

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The bench's load generator against a real server (the bench's own, on SQLite): every
/// request is sent and answered, in order within a connection, and an answer of 300 or more
/// ends the run with an error that names it.
@Suite struct LoadGeneratorTests {
    @Test(.timeLimit(.minutes(2))) func everyRequestIsAnsweredInOrderAndARefusalIsNamed() async throws {
        let logger = Logger(label: "load-generator-test", factory: { _ in SwiftLogNoOpLogHandler() })
        try await Bench.withHubAPI(.sqlite, connections: 4, logger: logger) { _, base, _, signature in
            let ids = (0..<60).map { _ in UUID().uuidString.lowercased() }
            let writes = Bench.createThenUpdate(ids).map { Bench.installationPut($0, signature: signature) }
            let answers = Answers()
            try await LoadGenerator.run(writes, base: base, connections: 4) { answers.add() }
            #expect(answers.count == 120)

            // Each installation was written, and its update (the second of its two PUTs, on
            // the same connection) came last: a read of every one answers with its tag.
            for id in ids.prefix(10) {
                let (status, body) = try await Self.get(base + "/bench/installations/\(id)?api-version=2020-06", signature: signature)
                #expect(status == 200)
                #expect(body.contains(#""sports""#) && !body.contains(#""news""#), "\(body)")
            }

            // A refusal ends the run, naming the request and the answer.
            let refused = [
                LoadRequest(method: "GET", path: "/bench/installations/\(ids[0])?api-version=2020-06", headers: [("authorization", signature)]),
                LoadRequest(method: "GET", path: "/bench/installations/nobody?api-version=2020-06", headers: [("authorization", signature)]),
                LoadRequest(method: "GET", path: "/bench/installations/\(ids[1])?api-version=2020-06", headers: [("authorization", signature)]),
            ]
            let afterRefusal = Answers()
            let error = await #expect(throws: LoadGenerator.Failure.self) {
                try await LoadGenerator.run(refused, base: base, connections: 1) { afterRefusal.add() }
            }
            #expect(error?.description.hasPrefix("GET /bench/installations/nobody?api-version=2020-06 answered 404") == true, "\(String(describing: error))")
            #expect(afterRefusal.count == 1)
        }
    }

    @Test func anAddressItCannotUseIsRefused() async throws {
        let error = await #expect(throws: LoadGenerator.Failure.self) {
            try await LoadGenerator.run([LoadRequest(method: "GET", path: "/")], base: "https://127.0.0.1:1", connections: 1) {}
        }
        #expect(error?.description == "the load generator needs an http://host:port address, not https://127.0.0.1:1")
    }

    @Test func aServerThatIsNotThereIsNamed() async throws {
        // A port that was free a moment ago: nothing listens on it.
        let port = try NodeProcess.freePort()
        let error = await #expect(throws: LoadGenerator.Failure.self) {
            try await LoadGenerator.run([LoadRequest(method: "GET", path: "/")], base: "http://127.0.0.1:\(port)", connections: 1) {}
        }
        #expect(error?.description.hasPrefix("the load generator could not connect to 127.0.0.1:\(port)") == true, "\(String(describing: error))")
    }

    @Test func workIsSplitIntoLanesOfConsecutiveItemsInOrder() {
        #expect(LoadGenerator.lanes(Array(0..<10), connections: 4) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]])
        #expect(LoadGenerator.lanes(Array(0..<3), connections: 32) == [[0], [1], [2]])
        #expect(LoadGenerator.lanes([Int](), connections: 4).isEmpty)
        #expect(LoadGenerator.lanes(Array(0..<4), connections: 0) == [[0, 1, 2, 3]])
    }

    /// How many answers came, from any connection.
    final class Answers: Sendable {
        private let answered = Mutex<Int>(0)
        var count: Int { answered.withLock { $0 } }
        func add() { answered.withLock { $0 += 1 } }
    }

    static func get(_ url: String, signature: String) async throws -> (Int, String) {
        var request = URLRequest(url: URL(string: url)!)
        request.setValue(signature, forHTTPHeaderField: "authorization")
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }
}
