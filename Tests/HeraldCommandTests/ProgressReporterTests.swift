import Foundation
import Synchronization
import Testing

@testable import herald

/// The progress of long commands (`herald store copy`, `herald bench`): lines every interval
/// of a test's clock when the output is not a terminal, a bar redrawn in place when it is.
@Suite struct ProgressReporterTests {
    /// A clock the test moves, and what the reporter wrote.
    final class Recorder: Sendable {
        private let time = Mutex<Duration>(.zero)
        private let written = Mutex<[String]>([])

        var now: Duration { time.withLock { $0 } }
        var writes: [String] { written.withLock { $0 } }
        func set(_ seconds: Double) { time.withLock { $0 = .milliseconds(Int(seconds * 1000)) } }

        func reporter(title: String, total: Int?, style: ProgressReporter.Output.Style) -> ProgressReporter {
            ProgressReporter(
                title: title, total: total,
                output: .init(style: style, write: { text in self.written.withLock { $0.append(text) } }),
                now: { self.now }
            )
        }
    }

    @Test func linesComeEveryIntervalThenAClosingLine() {
        let recorder = Recorder()
        let progress = recorder.reporter(title: "copy", total: 10_000, style: .lines(every: .seconds(2)))
        recorder.set(0.5)
        progress.advance(by: 1_000)
        recorder.set(2)
        progress.advance(by: 1_000)
        recorder.set(3)
        progress.advance(by: 3_000)  // 1 s after the last line: none
        recorder.set(4.5)
        progress.advance(by: 1_000)
        recorder.set(6)
        progress.update(done: 10_000)  // 1.5 s after the last line: none
        progress.finish()
        progress.finish()
        progress.advance(by: 5)
        #expect(
            recorder.writes == [
                "copy: 2,000 of 10,000 (20%), 1,000/s, 8.0 s left\n",
                "copy: 6,000 of 10,000 (60%), 1,333/s, 3.0 s left\n",
                "copy: 10,000 in 6.0 s (1,667/s)\n",
            ]
        )
    }

    /// Work shorter than the interval leaves no trace: the command's own summary says it all.
    @Test func shortWorkWritesNothing() {
        let recorder = Recorder()
        let progress = recorder.reporter(title: "copy", total: 100, style: .lines(every: .seconds(2)))
        recorder.set(1.9)
        progress.update(done: 100)
        progress.finish()
        #expect(recorder.writes.isEmpty)
    }

    @Test func withoutATotalTheCountAndTheRate() {
        let recorder = Recorder()
        let progress = recorder.reporter(title: "deliveries", total: nil, style: .lines(every: .seconds(2)))
        recorder.set(2)
        progress.update(done: 500)
        recorder.set(250)
        progress.update(done: 1_234_567)
        progress.finish()
        #expect(
            recorder.writes == [
                "deliveries: 500, 250/s\n",
                "deliveries: 1,234,567, 4,938/s\n",
                "deliveries: 1,234,567 in 4:10 (4,938/s)\n",
            ]
        )
    }

    /// On a terminal: one line redrawn in place, at most every 0.1 s, as wide as the terminal;
    /// at the end, the time the work took and a new line.
    @Test func aTerminalGetsABarRedrawnInPlace() throws {
        let recorder = Recorder()
        let progress = recorder.reporter(title: "copy", total: 10_000, style: .terminal(width: 80))
        recorder.set(3)
        progress.update(done: 4_500)
        recorder.set(3.05)
        progress.update(done: 4_600)  // too soon to redraw
        recorder.set(6)
        progress.update(done: 10_000)
        progress.finish()
        let writes = recorder.writes
        #expect(writes.count == 3)
        #expect(
            writes.first == "\r" + "copy [" + String(repeating: "=", count: 15) + ">" + String(repeating: " ", count: 20)
                + "]  45% 4,500/10,000 1,500/s ETA 3.7 s" + "\u{1B}[K"
        )
        #expect(writes.last == "\rcopy [" + String(repeating: "=", count: 36) + "] 100% 10,000/10,000 1,667/s in 6.0 s\u{1B}[K\n")
        for write in writes {
            let visible = write.replacingOccurrences(of: "\r", with: "").replacingOccurrences(of: "\u{1B}[K", with: "")
                .replacingOccurrences(of: "\n", with: "")
            #expect(visible.count < 80, "\(visible)")
            #expect(!write.dropLast().contains("\n"), "a redraw stays on its line")
        }
    }

    /// A note (an import's failed line) takes a line of its own; the bar comes back after it.
    @Test func aNoteTakesTheBarsLineAndTheBarComesBack() {
        let recorder = Recorder()
        let progress = recorder.reporter(title: "lines imported", total: 10, style: .terminal(width: 80))
        recorder.set(1)
        progress.update(done: 2)
        progress.note("file: line 3: bad")
        recorder.set(1.01)
        progress.update(done: 3)
        let writes = recorder.writes
        #expect(writes.count == 3)
        #expect(writes[1] == "\r\u{1B}[Kfile: line 3: bad\n")
        #expect(writes[2].hasPrefix("\rlines imported ["))

        let lines = Recorder()
        let logged = lines.reporter(title: "lines imported", total: 10, style: .lines(every: .seconds(2)))
        logged.note("file: line 3: bad")
        #expect(lines.writes == ["file: line 3: bad\n"])
    }

    /// A narrow terminal cuts the line rather than wrap it.
    @Test func aNarrowTerminalCutsTheLine() {
        let recorder = Recorder()
        let progress = recorder.reporter(title: "hub app: registrations", total: 1_000_000, style: .terminal(width: 40))
        recorder.set(1)
        progress.update(done: 1)
        let visible = recorder.writes.first?.dropFirst().replacingOccurrences(of: "\u{1B}[K", with: "") ?? ""
        #expect(visible.count == 39, "\(visible)")
        #expect(visible.hasPrefix("hub app: registrations ["))
    }

    /// Many tasks advancing at once add up, and the lines stay whole.
    @Test func concurrentAdvancesAddUp() async {
        let recorder = Recorder()
        let progress = recorder.reporter(title: "requests", total: 8_000, style: .lines(every: .zero))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<1_000 { progress.advance() } }
            }
        }
        recorder.set(1)
        progress.advance(by: 0)
        #expect(recorder.writes.last?.hasPrefix("requests: 8,000 of 8,000 (100%)") == true, "\(recorder.writes.last ?? "")")
    }

    @Test(arguments: [
        (0.26, "0.3 s"), (9.94, "9.9 s"), (42.4, "42 s"), (245, "4:05"), (3_845, "1:04:05"),
    ])
    func durations(seconds: Double, text: String) {
        #expect(ProgressReporter.formatted(seconds: seconds) == text)
    }
}
