package collectives

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kernelConstants reads the integer constants the kernels' sources define (constexpr and enum
// members of kernels/src/*.cuh and *.cu), evaluating each expression with the ones before it.
func kernelConstants(t *testing.T) map[string]int64 {
	t.Helper()
	files, err := filepath.Glob("../kernels/src/*.cu*")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	constexpr := regexp.MustCompile(`(?m)^\s*constexpr\s+\w+\s+(k\w+)\s*=\s*([^;]+);`)
	enum := regexp.MustCompile(`(?m)^\s*enum\s+\w+\s*:\s*\w+\s*\{([^}]*)\}`)
	member := regexp.MustCompile(`(k\w+)\s*=\s*([^,]+)`)
	consts := map[string]int64{}
	// Headers first, so that a .cu file's constants can use theirs.
	for _, pass := range []string{".cuh", ".cu"} {
		for _, f := range files {
			if filepath.Ext(f) != pass {
				continue
			}
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			for _, m := range constexpr.FindAllStringSubmatch(string(src), -1) {
				if v, ok := evalC(m[2], consts); ok {
					consts[m[1]] = v
				}
			}
			for _, e := range enum.FindAllStringSubmatch(string(src), -1) {
				for _, m := range member.FindAllStringSubmatch(e[1], -1) {
					if v, ok := evalC(m[2], consts); ok {
						consts[m[1]] = v
					}
				}
			}
		}
	}
	return consts
}

// intSuffix matches an integer literal's C suffix (10u, 0xffUL), which Go's parser does not take.
var intSuffix = regexp.MustCompile(`\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b`)

// evalC evaluates an integer expression of the kernels' sources: literals, constants defined
// before, casts such as uint64_t(1), and + - * << and parentheses. ok is false for anything else.
func evalC(expr string, consts map[string]int64) (v int64, ok bool) {
	e, err := parser.ParseExpr(intSuffix.ReplaceAllString(strings.TrimSpace(expr), "$1"))
	if err != nil {
		return 0, false
	}
	var eval func(ast.Expr) (int64, bool)
	eval = func(n ast.Expr) (int64, bool) {
		switch n := n.(type) {
		case *ast.BasicLit:
			if n.Kind != token.INT {
				return 0, false
			}
			x, err := strconv.ParseInt(n.Value, 0, 64)
			return x, err == nil
		case *ast.Ident:
			x, ok := consts[n.Name]
			return x, ok
		case *ast.ParenExpr:
			return eval(n.X)
		case *ast.CallExpr: // a cast: uint64_t(1)
			if len(n.Args) != 1 {
				return 0, false
			}
			return eval(n.Args[0])
		case *ast.BinaryExpr:
			x, okX := eval(n.X)
			y, okY := eval(n.Y)
			if !okX || !okY {
				return 0, false
			}
			switch n.Op {
			case token.ADD:
				return x + y, true
			case token.SUB:
				return x - y, true
			case token.MUL:
				return x * y, true
			case token.QUO:
				return x / y, y != 0
			case token.SHL:
				return x << y, true
			}
		}
		return 0, false
	}
	return eval(e)
}

// TestKernelConstantsMatch holds every constant the kernels and this package share to one value:
// the kernels' sources are read and evaluated, so a change on one side alone fails here.
func TestKernelConstantsMatch(t *testing.T) {
	consts := kernelConstants(t)
	for _, c := range []struct {
		kernel string
		goVal  int64
	}{
		{"kMaxBlocks", maxBlocks},
		{"kPacketThreads", packetThreads},
		{"kPacketPhases", packetPhases},
		{"kLineBytes", lineBytes},
		{"kLineDataWords", lineDataWords},
		{"kLineLanes", lineLanes},
		{"kRsagThreads", rsagThreads},
		{"kPutThreads", putThreads},
		{"kMaxRegistrations", maxRegistrations},
		{"kMaxZeroCopyPeers", maxZeroCopyPeers},
		{"kDescShift", descShift},
		{"kMaxP2PPeers", maxP2PPeers},
		{"kP2PLanes", p2pLanes},
		{"kP2PBaseLanes", p2pBaseLanes},
		{"kP2PLineSlotBytes", p2pLineSlotBytes},
		{"kP2PLinePieceBytes", p2pLinePieceBytes},
		{"kP2PChunkBytes", p2pChunkBytes},
		{"kP2PLaneBytes", p2pLaneBytes},
		{"kP2PSmallLanes", p2pSmallLanes},
		{"kP2PLaneMinBytes", p2pLaneMinBytes},
		{"kP2PThreads", p2pThreads},
		{"kP2PStreamBytes", p2pStreamBytes},
		{"kScaleThreads", scaleThreads},
		{"kAbortRequest", abortRequest},
		{"kAbortReport", abortReport},
		{"kReportNone", reportNone},
		{"kReportAborted", reportAborted},
		{"kReportTimedOut", reportTimedOut},
	} {
		v, ok := consts[c.kernel]
		if assert.True(t, ok, "kernels/src defines no %s (or it is not a plain integer expression)", c.kernel) {
			assert.Equal(t, c.goVal, v, "coll::%s", c.kernel)
		}
	}
}

func TestEvalC(t *testing.T) {
	consts := map[string]int64{"kA": 8}
	for _, c := range []struct {
		expr string
		want int64
		ok   bool
	}{
		{"128", 128, true},
		{"256 << 10", 256 << 10, true},
		{"uint64_t(1) << 30", 1 << 30, true},
		{"kA * 2 * (3 + 1)", 64, true},
		{"0x10u", 16, true},
		{"sizeof(uint4) / sizeof(T)", 0, false},
		{"kUnknown", 0, false},
	} {
		v, ok := evalC(c.expr, consts)
		assert.Equal(t, c.ok, ok, c.expr)
		if c.ok {
			assert.Equal(t, c.want, v, c.expr)
		}
	}
}
