package oracle

import (
	"fmt"

	"dcpi/analysis/cfg"
	"dcpi/hwsim/elfimage"
)

// FilesResolver resolves images from a simulated file system's contents
// (hwsim.Config.Files): each path is parsed once.
func FilesResolver(files map[string][]byte) Resolver {
	return func(path string) (*cfg.Code, string, error) {
		data, ok := files[path]
		if !ok {
			return nil, "", fmt.Errorf("oracle: no file %s", path)
		}
		im, err := elfimage.Parse(data, path)
		if err != nil {
			return nil, "", fmt.Errorf("oracle: %s: %w", path, err)
		}
		code, err := cfg.NewCode(im, cfg.Options{})
		if err != nil {
			return nil, "", fmt.Errorf("oracle: %s: %w", path, err)
		}
		return code, im.ID.String(), nil
	}
}
