import Foundation
import HeraldCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The progress of a long command's work, on standard error: on a terminal, a bar redrawn in
/// place with its rate and the time left; otherwise (a file, a pipe, a log) a line every two
/// seconds, and a closing line if any was written.
///
/// ```swift
/// let progress = ProgressReporter(title: "registrations", total: rows)
/// for batch in batches {
///     try await copy(batch)
///     progress.advance(by: batch.count)
/// }
/// progress.finish()
/// ```
///
/// `total` may be `nil` when the amount of work is not known: then there is no bar, no
/// percentage and no time left, only the count and the rate. Safe to call from several tasks
/// at once; what it writes stays in order. Nothing is written after ``finish()``.
final class ProgressReporter: Sendable {
    /// Where the progress goes, and in which style.
    struct Output: Sendable {
        enum Style: Sendable, Equatable {
            /// One line redrawn in place (`\r`, then the line, then "erase to the end of the
            /// line"), at most `width` columns, at most every 0.1 s.
            case terminal(width: Int)
            /// A line of its own every `interval`, for logs and pipes.
            case lines(every: Duration)
        }

        var style: Style
        var write: @Sendable (String) -> Void

        /// Standard error: the terminal style when it is a terminal (as wide as it is), lines
        /// every two seconds otherwise.
        static var standardError: Output {
            let write: @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }
            guard isatty(STDERR_FILENO) == 1 else { return Output(style: .lines(every: .seconds(2)), write: write) }
            return Output(style: .terminal(width: terminalWidth()), write: write)
        }

        /// The columns of the terminal on standard error; `COLUMNS`, or 80, when it does not say.
        static func terminalWidth() -> Int {
            var size = winsize()
            if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
            return ProcessInfo.processInfo.environment["COLUMNS"].flatMap { Int($0) } ?? 80
        }
    }

    let title: String
    let total: Int?
    private let output: Output
    /// Time since an arbitrary origin: the continuous clock's, or a test's.
    private let now: @Sendable () -> Duration
    private let state: Mutex<State>

    private struct State {
        var done = 0
        var started: Duration
        /// When a line was last written (the lines style) or the bar last drawn (terminal).
        var lastWritten: Duration?
        var linesWritten = 0
        var finished = false
    }

    /// The terminal's bar is redrawn at most this often.
    static let redrawInterval = Duration.milliseconds(100)

    convenience init(title: String, total: Int?, output: Output = .standardError) {
        let origin = ContinuousClock.now
        self.init(title: title, total: total, output: output, now: { ContinuousClock.now - origin })
    }

    /// With `now`, the time since any fixed origin, for a test's clock.
    init(title: String, total: Int?, output: Output, now: @escaping @Sendable () -> Duration) {
        self.title = title
        self.total = total.map { max(0, $0) }
        self.output = output
        self.now = now
        self.state = Mutex(State(started: now()))
    }

    /// `count` more items of the work are done.
    func advance(by count: Int = 1) {
        change { $0 += count }
    }

    /// `done` items of the work are done in all.
    func update(done: Int) {
        change { $0 = done }
    }

    /// The work is over: the bar is drawn a last time, with the time it took, and the line
    /// ended; in the lines style, a closing line if progress lines were written. Once only.
    func finish() {
        let time = now()
        state.withLock { state in
            guard !state.finished else { return }
            state.finished = true
            let elapsed = time - state.started
            switch output.style {
            case .terminal(let width):
                output.write("\r" + Self.fitted(bar(state.done, elapsed: elapsed, finished: true, width: width), width: width) + "\u{1B}[K\n")
            case .lines:
                guard state.linesWritten > 0 else { return }
                output.write(closingLine(state.done, elapsed: elapsed) + "\n")
            }
        }
    }

    /// Writes `message` on a line of its own (a per-item error, say): on a terminal the bar
    /// gives way to it and is drawn again at the next change.
    func note(_ message: String) {
        state.withLock { state in
            switch output.style {
            case .terminal:
                output.write("\r\u{1B}[K" + message + "\n")
                state.lastWritten = nil
            case .lines:
                output.write(message + "\n")
            }
        }
    }

    private func change(_ update: (inout Int) -> Void) {
        let time = now()
        state.withLock { state in
            guard !state.finished else { return }
            update(&state.done)
            let elapsed = time - state.started
            switch output.style {
            case .terminal(let width):
                if let last = state.lastWritten, time - last < Self.redrawInterval { return }
                state.lastWritten = time
                output.write("\r" + Self.fitted(bar(state.done, elapsed: elapsed, finished: false, width: width), width: width) + "\u{1B}[K")
            case .lines(let interval):
                if time - (state.lastWritten ?? state.started) < interval { return }
                state.lastWritten = time
                state.linesWritten += 1
                output.write(line(state.done, elapsed: elapsed) + "\n")
            }
        }
    }

    // MARK: What is written

    /// `copy: 4,500 of 10,000 (45%), 1,500/s, 4 s left` (without a total: `copy: 4,500, 1,500/s`).
    func line(_ done: Int, elapsed: Duration) -> String {
        var parts = [counted(done)]
        if let rate = Self.rate(done, elapsed) {
            parts.append(Self.formatted(rate: rate))
            if let left = timeLeft(done, rate: rate) { parts.append(Self.formatted(seconds: left) + " left") }
        }
        return "\(title): " + parts.joined(separator: ", ")
    }

    /// `copy: 10,000 in 6.2 s (1,613/s)`.
    func closingLine(_ done: Int, elapsed: Duration) -> String {
        var text = "\(title): \(done.grouped) in \(Self.formatted(seconds: elapsed.seconds))"
        if let rate = Self.rate(done, elapsed) { text += " (\(Self.formatted(rate: rate)))" }
        return text
    }

    /// `copy [========>           ]  45% 4,500/10,000 1,500/s ETA 4 s`; at the end the time it
    /// took instead of the time left. The bar takes the columns the rest leaves (10 to 40).
    func bar(_ done: Int, elapsed: Duration, finished: Bool, width: Int) -> String {
        let rate = Self.rate(done, elapsed)
        var tail: [String] = []
        if let total {
            tail.append(String(format: "%3d%%", percent(done, of: total)))
            tail.append("\(done.grouped)/\(total.grouped)")
        } else {
            tail.append(done.grouped)
        }
        if let rate { tail.append(Self.formatted(rate: rate)) }
        if finished {
            tail.append("in " + Self.formatted(seconds: elapsed.seconds))
        } else if let rate, let left = timeLeft(done, rate: rate) {
            tail.append("ETA " + Self.formatted(seconds: left))
        }
        let text = tail.joined(separator: " ")
        guard let total else { return "\(title) \(text)" }
        let barWidth = min(40, max(10, width - 1 - title.count - text.count - 4))
        let filled = total == 0 ? barWidth : min(barWidth, done * barWidth / total)
        let head = filled < barWidth && filled > 0 ? ">" : ""
        let body = String(repeating: "=", count: filled - head.count) + head + String(repeating: " ", count: barWidth - filled)
        return "\(title) [\(body)] \(text)"
    }

    private func counted(_ done: Int) -> String {
        guard let total else { return done.grouped }
        return "\(done.grouped) of \(total.grouped) (\(percent(done, of: total))%)"
    }

    private func percent(_ done: Int, of total: Int) -> Int {
        total == 0 ? 100 : min(100, max(0, done) * 100 / total)
    }

    private func timeLeft(_ done: Int, rate: Double) -> Double? {
        guard let total, rate > 0, done < total else { return nil }
        return Double(max(0, total - done)) / rate
    }

    /// Items per second since the start; `nil` before any time has passed or any item is done.
    static func rate(_ done: Int, _ elapsed: Duration) -> Double? {
        let seconds = elapsed.seconds
        guard seconds > 0, done > 0 else { return nil }
        return Double(done) / seconds
    }

    static func formatted(rate: Double) -> String {
        rate >= 100 ? "\(Int(rate.rounded()).grouped)/s" : String(format: "%.1f/s", rate)
    }

    /// `4.2 s`, `42 s`, `4:05`, `1:04:05`.
    static func formatted(seconds: Double) -> String {
        if seconds < 10 { return String(format: "%.1f s", seconds) }
        let whole = Int(seconds.rounded())
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return String(format: "%d:%02d", whole / 60, whole % 60) }
        return String(format: "%d:%02d:%02d", whole / 3600, whole / 60 % 60, whole % 60)
    }

    /// `text`, cut to `width - 1` columns (the last column of a terminal wraps on some).
    static func fitted(_ text: String, width: Int) -> String {
        text.count < width ? text : String(text.prefix(max(0, width - 1)))
    }
}
