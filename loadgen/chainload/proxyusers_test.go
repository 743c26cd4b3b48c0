package chainload

import (
	"errors"
	"testing"

	"github.com/flurrypt/flurry/loadgen/chainproc"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
)

func TestProxyUsersConfigChecks(t *testing.T) {
	im := chainproc.Implementation{Name: "a", Server: "/bin/true"}
	for _, cfg := range []ProxyUsersConfig{
		{Dir: t.TempDir()},
		{Implementations: []chainproc.Implementation{im}},
		{Dir: t.TempDir(), Implementations: []chainproc.Implementation{im}, Users: []int{5000}},
	} {
		if _, err := cfg.withDefaults(); !errors.Is(err, measure.ErrInvalidConfig) {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}
