//go:build !race

package sim

// raceDetector is true in tests built with -race.
const raceDetector = false
